import { Hono } from 'hono';
import { createFactory } from 'hono/factory';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { endpoint } from '../http/middleware';
import { readParam } from '../http/param-schema';
import { couldNameImage } from '../ingest/insert-request';
import { ADVANCED } from '../search/advanced';
import { readSearchOptions } from '../search/options';
import { searchQuota } from '../search/quota';
import { emptySearchPage } from '../search/paging';
import { searchSimilar } from '../search/similar';
import { fetchableFields, toValueMap } from '../search/value-map';
import { getSchema } from '../storage/apps';
import { findImageByName } from '../storage/images';
import { isImagePending } from '../storage/transactions';
import { imageVectors } from '../storage/vectors';

export const searchRoutes = new Hono<AppEnv>();
const factory = createFactory<AppEnv>();

/**
 * Visually similar images to one already in the collection; the query image itself is not among the results.
 * `/recommendation` is the same search under the name the official SDKs' `recommendation()` calls, answered as
 * the original service answers it: with `method: search`.
 */
const similar = factory.createHandlers(endpoint('search', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { params, app } = c.var;
  const imName = params.required('im_name', new ApiError(400, SEARCH_ERRORS.imageNotFound));
  const possible = couldNameImage(imName);
  // Both reads at once (one D1 round trip less); the parameters are still checked before the image is looked at.
  // The query image's metadata is read only for qinfo.
  const metadataFields = readParam(params, ADVANCED, 'qinfo') ? 'all' : [];
  const [schema, image] = await Promise.all([
    getSchema(c.env.DB, app.id),
    possible ? findImageByName(c.env.DB, app.id, imName, metadataFields) : null,
  ]);
  const options = readSearchOptions(params, schema, app, { limitName: 'limit', allowGroupBy: true });

  const stillProcessing = new ApiError(404, SEARCH_ERRORS.stillProcessing);
  if (!image) {
    if (possible && (await isImagePending(c.env.DB, app.id, imName))) throw stillProcessing;
    throw new ApiError(404, SEARCH_ERRORS.imageNotFound);
  }
  const [stored] = await imageVectors(c.env, app.embedModel).getByIds([String(image.id)]);
  if (!stored) throw stillProcessing;

  const page = await searchSimilar(c.env, { appId: app.id, embedModel: app.embedModel, space: 'visual', vector: stored.values, excludeIds: [image.id] }, options);
  return c.json({
    status: 'OK',
    method: 'search',
    error: [],
    page: options.paging.page,
    limit: options.paging.limit,
    ...page,
    ...(options.qinfo ? { qinfo: { im_name: image.im_name, value_map: toValueMap(image.metadata, fetchableFields(schema)) } } : {}),
    reqid: c.var.reqid,
  });
});

searchRoutes.get('/search', ...similar);
searchRoutes.get('/recommendation', ...similar);
