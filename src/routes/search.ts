import type { Handler } from 'hono';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { ok } from '../http/middleware';
import { route, type RouteDeclaration } from '../http/route';
import * as responses from '../openapi/responses';
import { ADVANCED } from '../search/advanced';
import { readSearchOptions } from '../search/options';
import { emptySearchPage, PAGING } from '../search/paging';
import { searchQuota } from '../search/quota';
import { runSearch } from '../search/pipeline';
import { searchedApp } from '../search/plan';
import { SIMILAR_QUERY } from '../search/similar-query';
import { fetchableFields, toValueMap } from '../search/value-map';
import { catalogDatabase } from '../storage/databases';
import { findImageByName } from '../storage/images';
import { isImagePending } from '../storage/transactions';
import { imageVectors } from '../storage/vectors';

/** Visually similar images to one already in the collection; the query image itself is not among the results. */
const similar: Handler<AppEnv> = async (c) => {
  const { params, app, schema } = c.var;
  const imName = params.required('im_name', new ApiError(400, SEARCH_ERRORS.imageNotFound));
  const options = readSearchOptions(params, schema, app, { limitName: 'limit', allowGroupBy: true });
  // The query image's metadata is read only for qinfo.
  const image = await findImageByName(catalogDatabase(c.env, app), app.id, imName, options.qinfo ? 'all' : []);

  const stillProcessing = new ApiError(404, SEARCH_ERRORS.stillProcessing);
  if (!image) {
    if (await isImagePending(catalogDatabase(c.env, app), app.id, imName)) throw stillProcessing;
    throw new ApiError(404, SEARCH_ERRORS.imageNotFound);
  }
  const [stored] = await imageVectors(c.env, app.embedModel).getByIds([String(image.id)]);
  if (!stored) throw stillProcessing;

  const page = await runSearch(c.env, { ...searchedApp(app), space: 'visual', vector: stored.values, excludeIds: [image.id] }, options);
  return ok(c, {
    page: options.paging.page,
    limit: options.paging.limit,
    ...page,
    ...(options.qinfo ? { qinfo: { im_name: image.im_name, value_map: toValueMap(image.metadata, fetchableFields(schema)) } } : {}),
  });
};

const similarRoute = {
  tag: 'Search',
  auth: 'client',
  // `/recommendation` is answered as the original service answers it: with `method: search`.
  endpoint: 'search',
  reads: 'near',
  query: { ...SIMILAR_QUERY, page: PAGING.page, limit: PAGING.limit, ...ADVANCED },
  success: { status: 200, schema: responses.searchResponse, description: 'Results, best first.' },
  failure: { envelope: responses.searchFailure, fields: emptySearchPage },
} satisfies Partial<RouteDeclaration>;

export const searchRoutes = [
  route(
    {
      ...similarRoute,
      method: 'get',
      path: '/search',
      operationId: 'search',
      summary: 'Visually similar images to one in the collection',
      description: 'The query image itself is not among the results. `detection` is not read here.',
    },
    searchQuota,
    similar,
  ),
  route(
    {
      ...similarRoute,
      method: 'get',
      path: '/recommendation',
      operationId: 'recommendation',
      summary: 'Visually similar recommendations: `/search` under the name the official SDKs call',
      description: 'The same search as `/search`, answered as the original service answers it, with `method: search`.',
    },
    searchQuota,
    similar,
  ),
];
