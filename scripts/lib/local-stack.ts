import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { EmbedModelIndexes } from '../../src/storage/embed-models.ts';
import { startInference } from '@edge-image-search/devtools/inference-service';
import { configuredEmbedModels, embedModelsFor, servedEmbedders, type ServedEmbedder } from './served-models.ts';
import { ROOT, useLocalWrangler } from './wrangler-env.ts';

export type LocalStackOptions = {
  port: number;
  inferencePort: number;
  adminToken: string;
  /** Where wrangler keeps local D1, R2, queue and Durable Object state; default `.wrangler/state` (npm start's). */
  persistTo?: string;
  /**
   * INFERENCE_EMBED_MODELS for the inference service, default the environment's. When set, the Worker's EMBED_MODELS
   * and EMBED_MODEL follow from what the service loaded (served-models.ts); unset, they stay wrangler.toml's.
   */
  embedModels?: string;
  /** More `--var NAME:value` settings for the Worker (they win over the derived EMBED_MODELS and EMBED_MODEL). */
  vars?: Record<string, string>;
  /** Called when wrangler exits on its own. */
  onExit?: (code: number | null) => void;
  /**
   * A file descriptor for what the migrations, the inference service and wrangler print (`npm start` keeps them in its
   * log); default this process's output.
   */
  log?: number;
};

export type LocalStack = {
  readonly baseUrl: string;
  readonly inferenceUrl: string;
  /** The bearer secret the inference service requires, for a caller beside the Worker (`npm run bench`). */
  readonly inferenceSecret: string;
  /** The embedders the service loaded, its default first. */
  readonly served: readonly ServedEmbedder[];
  /** The Worker's EMBED_MODELS and EMBED_MODEL: the models applications may be on, and the one new ones get. */
  readonly embedModels: Readonly<Record<string, EmbedModelIndexes>>;
  readonly defaultEmbedModel: string;
  /** The processes: the inference service, then wrangler. */
  readonly children: readonly ChildProcess[];
  stop(): void;
};

const wranglerBin = path.join(ROOT, 'node_modules/.bin/wrangler');

/**
 * The local simulation of distance (README, Run it): each D1 round trip to the primary, and each read a session may
 * serve from a replica, waits this many milliseconds in the Worker (src/storage/d1-meter.ts). Off unless set.
 */
const SIMULATED_DISTANCE = ['D1_SIMULATED_PRIMARY_MS', 'D1_SIMULATED_REPLICA_MS'] as const;

/** The simulated distances set in `environment`, as the Worker's vars. */
export const simulatedDistance = (environment: NodeJS.ProcessEnv = process.env): Record<string, string> =>
  Object.fromEntries(SIMULATED_DISTANCE.flatMap((name) => (environment[name] ? [[name, environment[name]]] : [])));

/** wrangler dev runs no cron: the stack calls the Worker's scheduled handler itself, as often as wrangler.toml's cron. */
const SWEEP_EVERY_MS = 10 * 60_000;
/** A first start on an `hf:` model downloads it before the service listens. */
const CHOSEN_MODELS_TIMEOUT_MS = 30 * 60_000;

/**
 * The whole service on this machine, with no Cloudflare account and no network: applies the D1 migrations, starts
 * the inference service with a fresh shared secret, then `wrangler dev` (local D1, R2, Queues and vector index), and
 * resolves once the Worker answers. Used by `npm start`, `npm run eval` and `npm run bench`.
 */
/** Applies every migration to the local D1 database `database` (its wrangler.toml name). */
function migrate(database: string, persist: string[], output: number | 'inherit'): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(wranglerBin, ['d1', 'migrations', 'apply', database, '--local', ...persist], { stdio: ['ignore', output, output], cwd: ROOT });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`applying the D1 migrations to ${database} failed`))));
  });
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  useLocalWrangler();
  const persist = options.persistTo ? ['--persist-to', options.persistTo] : [];
  const output = options.log ?? 'inherit';
  // Each local database (wrangler.toml: DB and DB_2) gets every migration, while the inference service loads: one
  // database after the other, as two wrangler processes on one state folder find its SQLite files locked.
  const migrated = (async () => {
    for (const database of ['image-search', 'image-search-2']) await migrate(database, persist, output);
  })();
  migrated.catch(() => {});

  const chosen = options.embedModels ?? (process.env.INFERENCE_EMBED_MODELS || undefined);
  console.log(
    chosen
      ? `Starting the inference service on 127.0.0.1:${options.inferencePort} with INFERENCE_EMBED_MODELS=${chosen}; waiting for its models (a first start on hf: models downloads them: minutes)...`
      : `Starting the inference service on 127.0.0.1:${options.inferencePort} (loading models)...`,
  );
  // A fresh shared secret per run: only this Worker can call this inference service.
  const inferenceSecret = randomBytes(16).toString('hex');
  const inference = await startInference(options.inferencePort, { secret: inferenceSecret, embedModels: chosen, ...(chosen && { timeoutMs: CHOSEN_MODELS_TIMEOUT_MS }), output: options.log });
  const inferenceUrl = `http://127.0.0.1:${options.inferencePort}`;
  await migrated.catch((error: unknown) => {
    inference.kill('SIGTERM');
    throw error;
  });

  const { served, models: embedModels, defaultModel: defaultEmbedModel } = await workerEmbedModels(inferenceUrl, chosen !== undefined).catch((error: unknown) => {
    inference.kill('SIGTERM');
    throw error;
  });
  const embedVars = chosen ? { EMBED_MODELS: JSON.stringify(embedModels), EMBED_MODEL: defaultEmbedModel } : {};

  const vars = { ADMIN_TOKEN: options.adminToken, INFERENCE_URL: inferenceUrl, INFERENCE_SECRET: inferenceSecret, ...embedVars, ...options.vars };
  const distance = SIMULATED_DISTANCE.filter((name) => Number(options.vars?.[name] ?? 0) > 0).map((name) => `${name}=${options.vars?.[name]}`);
  if (distance.length > 0) console.log(`Simulating distance to D1: ${distance.join(', ')} (milliseconds added to each round trip)`);
  const wrangler = spawn(
    wranglerBin,
    [
      'dev',
      '--ip', '127.0.0.1',
      '--port', String(options.port),
      ...Object.entries(vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
      ...persist,
      '--test-scheduled',
      '--show-interactive-dev-session=false',
    ],
    { stdio: ['ignore', output, output], cwd: ROOT },
  );
  const baseUrl = `http://127.0.0.1:${options.port}`;
  // The sweeper re-sends stalled inserts: local queues live in memory, and a restart of wrangler loses their messages.
  const sweeps = setInterval(() => void fetch(`${baseUrl}/__scheduled?cron=*/10+*+*+*+*`).catch(() => {}), SWEEP_EVERY_MS);
  sweeps.unref();
  const stack: LocalStack = {
    baseUrl,
    inferenceUrl,
    inferenceSecret,
    served,
    embedModels,
    defaultEmbedModel,
    children: [inference, wrangler],
    stop: () => {
      clearInterval(sweeps);
      for (const child of stack.children) child.kill('SIGTERM');
    },
  };
  wrangler.on('exit', (code) => options.onExit?.(code));
  try {
    await waitFor(`${stack.baseUrl}/`, 120_000);
  } catch (error) {
    stack.stop();
    throw error;
  }
  return stack;
}

/**
 * What the service loaded, and the Worker's EMBED_MODELS and EMBED_MODEL: derived from it when the models were chosen
 * (INFERENCE_EMBED_MODELS), else wrangler.toml's as they are, so that existing local data keeps its indexes.
 */
async function workerEmbedModels(inferenceUrl: string, chosen: boolean) {
  const served = await servedEmbedders(inferenceUrl);
  const configured = configuredEmbedModels();
  const { models, defaultModel } = chosen ? embedModelsFor(served, configured.models) : { models: Object.fromEntries(configured.models), defaultModel: configured.defaultModel };
  return { served, models, defaultModel };
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}
