/**
 * Every binding, variable and secret of the Worker. `WranglerEnv` is wrangler.toml's bindings and variables, generated
 * into worker-configuration.d.ts by `node scripts/env-types.ts` (`npm run check:env-types` fails while it is stale);
 * the secrets are set outside wrangler.toml (`wrangler secret put`, `npm start`'s `--var`), so they are listed here.
 * Each middleware types the request variables it sets itself (Hono's ContextVariableMap).
 */
export interface Env extends WranglerEnv {
  /** Bearer token of the admin API. */
  ADMIN_TOKEN: string;
  /** Bearer secret the inference service requires (`npm start` makes one per run). */
  INFERENCE_SECRET?: string;
  /**
   * A local simulation of distance (README, Run it; `npm start` passes them from its environment): the milliseconds
   * each D1 round trip to the primary, and each read a session may serve from a replica, waits. Unset in a deploy.
   */
  D1_SIMULATED_PRIMARY_MS?: string;
  D1_SIMULATED_REPLICA_MS?: string;
  /**
   * Vectors one index holds before placement counts it full (storage/placement.ts); unset: Vectorize's 10 million.
   * Only a local stack sets it, to watch a refusal without filling an index.
   */
  VECTOR_INDEX_CAPACITY?: string;
}

export type AppEnv = { Bindings: Env };
