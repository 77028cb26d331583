import { Hono, type Context } from 'hono';
import { createFactory } from 'hono/factory';
import { wrapTime } from 'hono/timing';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { endpoint } from '../http/middleware';
import { readParam } from '../http/param-schema';
import type { DetectedObject } from '../ports/inference/types';
import {
  DETECTION,
  describeObject,
  detectionMode,
  keptObjects,
  objectAt,
  readSensitivity,
  typeList,
} from '../search/detection';
import { readSearchOptions } from '../search/options';
import { searchQuota } from '../search/quota';
import { emptySearchPage, noObjects } from '../search/paging';
import { requireCollection } from '../search/collection';
import { analyzeQuery } from '../search/query-analysis';
import { keepQueryImage, resolveQueryImage } from '../search/query-image';
import { readRegion } from '../search/region';
import { searchSimilar } from '../search/similar';
import { getSchema } from '../storage/apps';

export const imageSearchRoutes = new Hono<AppEnv>();
const factory = createFactory<AppEnv>();


/**
 * What both upload searches do first: read and check the parameters, then resolve, analyse and start keeping the
 * query image. Parameters are checked before anything is downloaded or processed, and nothing is kept for a refused
 * image.
 */
async function prepare(c: Context<AppEnv>, endpoint: { limitName: 'limit' | 'result_limit'; allowPoints: boolean }) {
  const { params, app } = c.var;
  // Spec 4.6: group_by is not supported by /discoversearch, the one endpoint with points.
  const options = readSearchOptions(params, await getSchema(c.env.DB, app.id), app, {
    limitName: endpoint.limitName,
    allowGroupBy: !endpoint.allowPoints,
  });
  const region = readRegion(params, { allowPoints: endpoint.allowPoints });
  const sensitivity = readSensitivity(params);
  const detection = readParam(params, DETECTION, 'detection');
  await requireCollection(c.env.DB, app.id);

  const query = await wrapTime(c, 'image', resolveQueryImage(c.env, app.id, params));
  const analysis = await wrapTime(c, 'inference', analyzeQuery(c.env, query, region));
  const mode = detectionMode(detection, analysis.types);
  // Kept while the index is searched (each route awaits both): the answer still names an im_id that is there.
  const kept = wrapTime(c, 'keep', keepQueryImage(c.env, app.id, query));
  const search = (vector: number[], objectType: string | undefined) =>
    searchSimilar(c.env, { appId: app.id, space: 'visual', vector, objectType }, options);
  return { options, paging: options.paging, region, sensitivity, query, analysis, mode, search, kept };
}

/** Search by image (spec 4.5): the primary object (or the object at a point, or the box) is searched. */
const uploadSearch = factory.createHandlers(endpoint('uploadsearch', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { options, paging, region, sensitivity, query, analysis, mode, search, kept } = await prepare(c, { limitName: 'limit', allowPoints: false });
  const point = region.kind === 'points' ? region.points[0] : undefined;
  const detected = point ? [objectAt(analysis.objects, mode, point)].filter((object) => object !== undefined) : keptObjects(analysis.objects, mode, sensitivity);
  const primary: DetectedObject | undefined = detected[0];

  const [page] = await Promise.all([wrapTime(c, 'index', search(primary?.embedding ?? analysis.region.embedding, primary?.type)), kept]);
  return c.json({
    status: 'OK',
    method: 'uploadsearch',
    error: [],
    page: paging.page,
    limit: paging.limit,
    product_types: detected.map(describeObject),
    product_types_list: typeList(analysis.types),
    ...page,
    im_id: query.imId,
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: primary?.box ?? analysis.region.box, type: primary?.type ?? null } } : {}),
    reqid: c.var.reqid,
  });
});

/** Multiple product search (spec 4.6): every detected object (or the object at each point) gets its own results. */
const discoverSearch = factory.createHandlers(endpoint('discoversearch', { failureFields: noObjects }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const detectionLimit = readParam(c.var.params, DETECTION, 'detection_limit');
  const { options, paging, region, sensitivity, query, analysis, mode, search, kept } = await prepare(c, {
    limitName: 'result_limit',
    allowPoints: true,
  });

  let targets: { object: Pick<DetectedObject, 'type' | 'score' | 'box' | 'embedding'>; objectType: string | undefined }[];
  if (mode.kind === 'off') {
    // Detection off: the whole image (or the box) is searched as one object.
    targets = [{ object: { type: 'other', score: 1, ...analysis.region }, objectType: undefined }];
  } else {
    const objects =
      region.kind === 'points'
        ? [...new Set(region.points.map((point) => objectAt(analysis.objects, mode, point)).filter((object) => object !== undefined))]
        : keptObjects(analysis.objects, mode, sensitivity).slice(0, detectionLimit);
    targets = objects.map((object) => ({ object, objectType: object.type }));
  }

  const searching = Promise.all(
    targets.map(async ({ object, objectType }) => {
      const page = await search(object.embedding, objectType);
      return { ...describeObject(object), ...page };
    }),
  );
  const [objects] = await Promise.all([wrapTime(c, 'index', searching), kept]);
  return c.json({
    status: 'OK',
    method: 'discoversearch',
    error: [],
    result_limit: paging.limit,
    detection_limit: detectionLimit,
    page: paging.page,
    objects,
    object_types_list: typeList(analysis.types),
    im_id: query.imId,
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: analysis.region.box, detection: mode.kind === 'type' ? mode.type : mode.kind } } : {}),
    reqid: c.var.reqid,
  });
});

// An image URL or im_id fits a GET, as the official Python and Android SDKs send them; a file needs a POST, multipart
// or (without a file) urlencoded (docs/decisions.md).
for (const method of ['get', 'post'] as const) {
  imageSearchRoutes[method]('/uploadsearch', ...uploadSearch);
  imageSearchRoutes[method]('/discoversearch', ...discoverSearch);
}
