import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { GENERAL } from '../http/messages';
import { countSearch } from '../storage/usage';

/**
 * The operator's per-minute limits on an application's searches and uploaded query-image bytes (admin API:
 * `searches_per_minute`, `upload_bytes_per_minute`): past either, the call is answered busy, with `Retry-After` at the
 * next minute, before any image is downloaded or analysed. An app key is public, so this is what keeps one
 * application's page from taking the inference service from the others. Runs after authenticate.
 */
export const searchQuota = createMiddleware<AppEnv>(async (c, next) => {
  const { searchesPerMinute, uploadBytesPerMinute } = c.var.app.limits;
  if (searchesPerMinute !== null || uploadBytesPerMinute !== null) {
    const uploaded = c.var.params.file('image')?.size ?? 0;
    const used = await countSearch(c.env.DB, c.var.app.id, uploaded);
    const over = (searchesPerMinute !== null && used.searches > searchesPerMinute) || (uploadBytesPerMinute !== null && used.uploadBytes > uploadBytesPerMinute);
    if (over) throw new ApiError(429, GENERAL.busy, undefined, { retryAfterSeconds: used.secondsLeft });
  }
  await next();
});
