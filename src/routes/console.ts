import { Hono } from 'hono';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { endpoint } from '../http/middleware';
import { couldNameImage } from '../ingest/insert-request';
import { searchQuota } from '../search/quota';
import { findImageByName } from '../storage/images';

export const consoleRoutes = new Hono<AppEnv>();

/**
 * The stored bytes of a collection image: the web console's thumbnails (the spec has no endpoint for them).
 * Authenticated like the searches, so an app key may read them, and counted as a call under `searches_per_minute`
 * like them; an application only ever finds its own images.
 */
consoleRoutes.get('/image', endpoint('image', { httpStatuses: true }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { params, app } = c.var;
  const notFound = new ApiError(404, SEARCH_ERRORS.imageNotFound);
  const imName = params.required('im_name', new ApiError(400, SEARCH_ERRORS.imageNotFound));
  // The collection is what D1 lists: bytes of an image being removed, or of a failed insert, are not shown.
  const image = couldNameImage(imName) ? await findImageByName(c.env.DB, app.id, imName, []) : null;
  const blob = image && (await c.env.BLOBS.get(image.blob_key));
  if (!blob) throw notFound;
  return c.body(blob.body, 200, {
    'content-type': blob.httpMetadata?.contentType ?? 'application/octet-stream',
    // The bytes are whatever an im_url served: never let a browser read them as anything but the stored type.
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'",
    'cache-control': 'private, max-age=60',
  });
});
