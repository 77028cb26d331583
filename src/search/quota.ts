import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { GENERAL } from '../http/messages';
import type { AppRecord } from '../storage/apps';
import { countUsage, type MinuteUsage, type UsageCounter } from '../storage/usage-counter';

/** What searchQuota sets: what the minute's `upload_bytes_per_minute` leaves this search to download; Infinity without it. */
export type QuotaVariables = { queryBytesLeft: number };

declare module 'hono' {
  interface ContextVariableMap extends QuotaVariables {}
}

const over = (limit: number | null, used: number): boolean => limit !== null && used > limit;
const busyTillNextMinute = (used: MinuteUsage): ApiError => new ApiError(429, GENERAL.busy, undefined, { retryAfterSeconds: used.secondsLeft });

/**
 * The operator's per-minute limits on an application's calls and query-image bytes (admin API:
 * `searches_per_minute`, `upload_bytes_per_minute`): past either, the call is answered busy, with `Retry-After` at the
 * next minute, before any image is analysed. An app key is public, so this is what keeps one application's page from
 * taking the inference service (or the stored images, `/image`) from the others. An uploaded image is counted here,
 * before it is read; a downloaded one once read (countDownloadedBytes), and a download reads only what the minute has
 * left (`queryBytesLeft`). Counted by the application's UsageCounter, no D1 write (docs/decisions.md, "Per-minute
 * limits"). Runs after authenticate.
 */
export const searchQuota = createMiddleware<AppEnv>(async (c, next) => {
  const { searchesPerMinute, uploadBytesPerMinute } = c.var.app.limits;
  let bytesLeft = Infinity;
  if (searchesPerMinute !== null || uploadBytesPerMinute !== null) {
    const used = await countUsage(c.env.USAGE_COUNTER, c.var.app.id, 1, c.var.params.file('image')?.size ?? 0);
    if (over(searchesPerMinute, used.searches) || over(uploadBytesPerMinute, used.uploadBytes)) throw busyTillNextMinute(used);
    if (uploadBytesPerMinute !== null) bytesLeft = uploadBytesPerMinute - used.uploadBytes;
  }
  c.set('queryBytesLeft', bytesLeft);
  await next();
});

/** Counts the bytes of a downloaded query image, known only once read: past the limit, busy before any analysis. */
export async function countDownloadedBytes(counters: DurableObjectNamespace<UsageCounter>, app: Pick<AppRecord, 'id' | 'limits'>, bytes: number): Promise<void> {
  const limit = app.limits.uploadBytesPerMinute;
  if (limit === null) return;
  const used = await countUsage(counters, app.id, 0, bytes);
  if (over(limit, used.uploadBytes)) throw busyTillNextMinute(used);
}

/** A download cut at the `left` bytes the minute had: it passes the limit, as an upload of the image would. */
export async function refuseCutDownload(counters: DurableObjectNamespace<UsageCounter>, app: Pick<AppRecord, 'id'>, left: number): Promise<never> {
  throw busyTillNextMinute(await countUsage(counters, app.id, 0, left + 1));
}
