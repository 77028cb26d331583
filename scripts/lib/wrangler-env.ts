import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Wrangler, offline and self-contained: no metrics, no request for Cloudflare's edge data, and its config and logs
 * inside the project's ignored `.wrangler/` folder rather than the user's home. Its local trace collector is off
 * unless asked for (`X_LOCAL_OBSERVABILITY=true`): it stores every span of every request in a Durable Object, which
 * took a quarter of workerd's CPU during an ingest and grows without bound (docs/measurements.md).
 */
export function useLocalWrangler(): void {
  process.env.WRANGLER_SEND_METRICS = 'false';
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
  process.env.X_LOCAL_OBSERVABILITY ??= 'false';
  process.env.XDG_CONFIG_HOME ??= path.join(ROOT, '.wrangler/config');
  process.env.WRANGLER_LOG_PATH ??= path.join(ROOT, '.wrangler/logs');
}
