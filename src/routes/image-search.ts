import type { Context, Handler } from 'hono';
import { wrapTime } from 'hono/timing';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { ok } from '../http/middleware';
import { readParam } from '../http/param-schema';
import { FORMS, route, type RouteDeclaration } from '../http/route';
import * as responses from '../openapi/responses';
import { ADVANCED } from '../search/advanced';
import { requireCollection } from '../search/collection';
import { DEFAULT_DETECTION_LIMIT, DETECTION, describeObject, detectionMode, readSensitivity, typeList } from '../search/detection';
import { readSearchOptions } from '../search/options';
import { emptySearchPage, noObjects, PAGING } from '../search/paging';
import { analyzeBox, analyzeImage, type BoxAnalysis } from '../search/query-analysis';
import { keepQueryImage, QUERY_IMAGE, resolveQueryImage } from '../search/query-image';
import {
  discoverSearchedBox,
  discoverSearchesContent,
  discoverSearchTargets,
  uploadSearchesContent,
  uploadSearchTargets,
} from '../search/query-object';
import { searchQuota } from '../search/quota';
import { readRegion, REGION } from '../search/region';
import { runSearch } from '../search/pipeline';
import { searchedApp } from '../search/plan';
import { embedQueryText, readQueryText, steer, STEERING_TEXT } from '../search/text-query';
import { catalogDatabase } from '../storage/databases';

/**
 * What both upload searches do first: read and check the parameters, then resolve and analyse the query image (the
 * whole image once, kept with it for later searches by `im_id`; a box's own content too, when the endpoint
 * searches it), and start keeping it. Parameters are checked before anything is downloaded or processed, and nothing
 * is kept for a refused image, box or text. With `q`, every searched vector is steered by the text's.
 */
async function prepare(
  c: Context<AppEnv>,
  endpoint: { limitName: 'limit' | 'result_limit'; allowPoints: boolean; searchesContent: (box: BoxAnalysis) => boolean },
) {
  const { params, app } = c.var;
  // group_by is not supported by /discoversearch, the one endpoint with points.
  const options = readSearchOptions(params, c.var.schema, app, {
    limitName: endpoint.limitName,
    allowGroupBy: !endpoint.allowPoints,
  });
  const region = readRegion(params, { allowPoints: endpoint.allowPoints });
  const sensitivity = readSensitivity(params);
  const detection = readParam(params, DETECTION, 'detection');
  const text = readQueryText(params, { required: false });
  await requireCollection(catalogDatabase(c.env, app), app.id);

  const analysed = (async () => {
    const query = await wrapTime(c, 'image', resolveQueryImage(c.env, app, params, c.var.queryBytesLeft));
    return { query, analysis: query.analysis ?? (await wrapTime(c, 'inference', analyzeImage(c.env, await query.bytes(), app))) };
  })();
  // The text is embedded while the image is read and analysed; a model that reads none fails before anything is kept.
  const [{ query, analysis }, textVector] = await Promise.all([
    analysed,
    text === undefined ? undefined : wrapTime(c, 'text', embedQueryText(c.env, text, app.embedModel)),
  ]);
  const mode = detectionMode(detection, analysis.types);
  const box = region.kind === 'box' ? analyzeBox(c.env, query.bytes, region.box, analysis, { mode, sensitivity }, app) : undefined;
  const content = box && endpoint.searchesContent(box) ? await wrapTime(c, 'box', box.content()) : undefined;
  // Kept while the index is searched (each route awaits both): the answer still names an im_id that is there.
  const kept = wrapTime(c, 'keep', keepQueryImage(c.env, app, query, analysis));
  const search = (vector: number[], objectType: string | undefined) =>
    runSearch(c.env, { ...searchedApp(app), space: 'visual', vector: textVector ? steer(vector, textVector) : vector, objectType }, options);
  const objects = { analysis, region, mode, sensitivity, box, content };
  return { options, paging: options.paging, query, analysis, objects, mode, search, kept, text };
}

/** Search by image (docs/api.md, POST /uploadsearch): the primary object, the object at a point, or what the box names, is searched. */
const uploadSearch: Handler<AppEnv> = async (c) => {
  const { options, paging, analysis, query, objects, search, kept, text } = await prepare(c, {
    limitName: 'limit',
    allowPoints: false,
    searchesContent: uploadSearchesContent,
  });
  const detected = uploadSearchTargets(objects);
  const target = detected[0];
  const searched = target?.object ?? analysis.whole;
  const [page] = await Promise.all([wrapTime(c, 'index', search(searched.embedding, target?.objectType)), kept]);
  return ok(c, {
    page: paging.page,
    limit: paging.limit,
    product_types: detected.map(({ object }) => describeObject(object)),
    product_types_list: typeList(analysis.types, c.var.app),
    ...page,
    im_id: query.imId,
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: searched.box, type: target?.objectType ?? null, ...(text && { q: text }) } } : {}),
  });
};

/** Multiple product search (docs/api.md, POST /discoversearch): every detected object (or the object at each point) gets its own results. */
const discoverSearch: Handler<AppEnv> = async (c) => {
  // Ignored when `point` is present, so not checked then either.
  const detectionLimit = c.var.params.has('point') ? DEFAULT_DETECTION_LIMIT : readParam(c.var.params, DETECTION, 'detection_limit');
  const { options, paging, query, analysis, objects, mode, search, kept, text } = await prepare(c, {
    limitName: 'result_limit',
    allowPoints: true,
    searchesContent: discoverSearchesContent,
  });
  const searching = Promise.all(
    discoverSearchTargets(objects, detectionLimit).map(async ({ object, objectType }) => {
      const page = await search(object.embedding, objectType);
      return { ...describeObject(object), ...page };
    }),
  );
  const [found] = await Promise.all([wrapTime(c, 'index', searching), kept]);
  const detection = mode.kind === 'type' ? mode.type : mode.kind;
  return ok(c, {
    result_limit: paging.limit,
    detection_limit: detectionLimit,
    page: paging.page,
    objects: found,
    object_types_list: typeList(analysis.types, c.var.app),
    im_id: query.imId,
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: discoverSearchedBox(objects), detection, ...(text && { q: text }) } } : {}),
  });
};

const { page, limit, result_limit } = PAGING;
const { group_by, group_limit, ...advancedWithoutGroups } = ADVANCED;
const { detection_limit, ...detection } = DETECTION;
const { image: _file, ...imageByReference } = QUERY_IMAGE;
const uploadSearchParams = { box: REGION.box, ...detection, ...STEERING_TEXT, page, limit, ...ADVANCED };
const discoverSearchParams = { ...REGION, ...detection, detection_limit, ...STEERING_TEXT, page, result_limit, ...advancedWithoutGroups };

const searchAccess = { tag: 'Search', auth: 'client', reads: 'near' } as const;
const uploadSearchRoute = {
  ...searchAccess,
  endpoint: 'uploadsearch',
  success: { status: 200, schema: responses.uploadSearchResponse, description: 'Results for the searched object.' },
  failure: { envelope: responses.searchFailure, fields: emptySearchPage },
} satisfies Partial<RouteDeclaration>;
const discoverSearchRoute = {
  ...searchAccess,
  endpoint: 'discoversearch',
  success: { status: 200, schema: responses.discoverSearchResponse, description: 'Objects and their results.' },
  failure: { envelope: responses.discoverSearchFailure, fields: noObjects },
} satisfies Partial<RouteDeclaration>;

// An image URL or im_id fits a GET, as the official Python and Android SDKs send them; a file needs a POST, multipart
// or (without a file) urlencoded (docs/decisions.md).
export const imageSearchRoutes = [
  route(
    {
      ...uploadSearchRoute,
      method: 'post',
      path: '/uploadsearch',
      operationId: 'uploadsearch',
      summary: 'Search by an uploaded image, an image URL or an earlier upload',
      description:
        'Exactly one of `image`, `im_url` and `im_id`. The primary detected object is searched, or the ' +
        'object at a zero-size `box`, or the area of a `box`; `q` steers it by a text (a model that reads text only).',
      body: { media: FORMS, schema: z.object({ ...QUERY_IMAGE, ...uploadSearchParams }) },
    },
    searchQuota,
    uploadSearch,
  ),
  route(
    {
      ...uploadSearchRoute,
      method: 'get',
      path: '/uploadsearch',
      operationId: 'uploadsearchByReference',
      summary: 'Search by an image URL or an earlier upload, as a GET',
      description: 'As `POST /uploadsearch`, with `im_url` or `im_id` (a file needs a POST).',
      query: { ...imageByReference, ...uploadSearchParams },
    },
    searchQuota,
    uploadSearch,
  ),
  route(
    {
      ...discoverSearchRoute,
      method: 'post',
      path: '/discoversearch',
      operationId: 'discoversearch',
      summary: 'Every detected object of an image, each with its own results',
      description: 'Exactly one of `image`, `im_url` and `im_id`; not both `box` and `point`; no `group_by`.',
      body: { media: FORMS, schema: z.object({ ...QUERY_IMAGE, ...discoverSearchParams }) },
    },
    searchQuota,
    discoverSearch,
  ),
  route(
    {
      ...discoverSearchRoute,
      method: 'get',
      path: '/discoversearch',
      operationId: 'discoversearchByReference',
      summary: 'Every detected object of an image given by URL or earlier upload, as a GET',
      description: 'As `POST /discoversearch`, with `im_url` or `im_id` (a file needs a POST).',
      query: { ...imageByReference, ...discoverSearchParams },
    },
    searchQuota,
    discoverSearch,
  ),
];
