import { ApiError } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { httpErrors, route } from '../http/route';
import { searchQuota } from '../search/quota';
import { SIMILAR_QUERY } from '../search/similar-query';
import { catalogDatabase } from '../storage/databases';
import { findImageByName } from '../storage/images';

/**
 * What the web console (public/console/, static assets) needs of the Worker: `GET /` leading to it, and the stored
 * bytes of a collection image for its thumbnails (the API has no endpoint for them). The bytes are authenticated
 * like the searches, so an app key may read them, and counted as a call under `searches_per_minute` like them; an
 * application only ever finds its own images.
 */
export const consoleRoutes = [
  route(
    {
      method: 'get',
      path: '/',
      operationId: 'home',
      tag: 'Reference',
      summary: 'The web console',
      description: 'Redirects to the web console, `/console/`, which links this reference.',
      auth: 'none',
      success: { status: 302, description: 'To `/console/`.' },
      failure: { statuses: [] },
    },
    (c) => c.redirect('/console/', 302),
  ),
  route(
    {
      method: 'get',
      path: '/image',
      operationId: 'image',
      tag: 'Search',
      summary: 'The stored bytes of a collection image',
      description: "The web console's thumbnails; not in the ViSearch API. Each counts as a call under `searches_per_minute`.",
      auth: 'client',
      endpoint: 'image',
      reads: 'near',
      query: SIMILAR_QUERY,
      success: { status: 200, media: 'image/*', description: 'The image as it was downloaded at insert.' },
      failure: httpErrors(404, 429),
    },
    searchQuota,
    async (c) => {
      const { params, app } = c.var;
      const imName = params.required('im_name', new ApiError(400, SEARCH_ERRORS.imageNotFound));
      // The collection is what D1 lists: bytes of an image being removed, or of a failed insert, are not shown.
      const image = await findImageByName(catalogDatabase(c.env, app), app.id, imName, []);
      const blob = image && (await c.env.BLOBS.get(image.blob_key));
      if (!blob) throw new ApiError(404, SEARCH_ERRORS.imageNotFound);
      return c.body(blob.body, 200, {
        'content-type': blob.httpMetadata?.contentType ?? 'application/octet-stream',
        // The bytes are whatever an im_url served: never let a browser read them as anything but the stored type.
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'",
        'cache-control': 'private, max-age=60',
      });
    },
  ),
];
