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
import { analyzeBox, analyzeImage, type QueryRegion } from '../search/query-analysis';
import { keepQueryImage, resolveQueryImage } from '../search/query-image';
import { readRegion } from '../search/region';
import { searchSimilar } from '../search/similar';
import { getSchema } from '../storage/apps';

export const imageSearchRoutes = new Hono<AppEnv>();
const factory = createFactory<AppEnv>();


/**
 * What both upload searches do first: read and check the parameters, then resolve and analyse the query image (the
 * whole image once, kept with it for later searches by `im_id`; a box that names no detected object on its own),
 * and start keeping it. Parameters are checked before anything is downloaded or processed, and nothing is kept for a
 * refused image.
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
  const analysis = query.analysis ?? (await wrapTime(c, 'inference', analyzeImage(c.env, query.bytes)));
  const mode = detectionMode(detection, analysis.types);
  const box = region.kind === 'box' ? await wrapTime(c, 'box', analyzeBox(c.env, query.bytes, region.box, analysis, { mode, sensitivity })) : undefined;
  // Kept while the index is searched (each route awaits both): the answer still names an im_id that is there.
  const kept = wrapTime(c, 'keep', keepQueryImage(c.env, app.id, query, analysis));
  const search = (vector: number[], objectType: string | undefined) =>
    searchSimilar(c.env, { appId: app.id, space: 'visual', vector, objectType }, options);
  return { options, paging: options.paging, region, sensitivity, query, analysis, box, mode, search, kept };
}

/** A searched region that is no detected object, as the answers show it: `other`, unless an object fills it. */
const regionAsObject = (region: QueryRegion, filling?: DetectedObject): SearchTarget => ({
  object: { type: filling?.type ?? 'other', score: filling?.score ?? 1, ...region },
  objectType: filling?.type,
});

type SearchTarget = { object: Pick<DetectedObject, 'type' | 'score' | 'box' | 'embedding'>; objectType: string | undefined };
const asTarget = (object: DetectedObject): SearchTarget => ({ object, objectType: object.type });

/** Search by image (spec 4.5): the primary object, the object at a point, or what the box names, is searched. */
const uploadSearch = factory.createHandlers(endpoint('uploadsearch', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { options, paging, region, sensitivity, query, analysis, box, mode, search, kept } = await prepare(c, { limitName: 'limit', allowPoints: false });
  // Spec 4.5: `product_types` lists the detected objects; the first is the one searched.
  let detected: SearchTarget[];
  if (box) detected = [box.kind === 'object' ? asTarget(box.object) : regionAsObject(box.content, box.filling)];
  else if (region.kind === 'points') detected = [objectAt(analysis.objects, mode, region.points[0]!)].filter((object) => object !== undefined).map(asTarget);
  else detected = keptObjects(analysis.objects, mode, sensitivity).map(asTarget);
  const target = detected[0];

  const searched = target?.object ?? analysis.whole;
  const [page] = await Promise.all([wrapTime(c, 'index', search(searched.embedding, target?.objectType)), kept]);
  return c.json({
    status: 'OK',
    method: 'uploadsearch',
    error: [],
    page: paging.page,
    limit: paging.limit,
    product_types: detected.map(({ object }) => describeObject(object)),
    product_types_list: typeList(analysis.types),
    ...page,
    im_id: query.imId,
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: searched.box, type: target?.objectType ?? null } } : {}),
    reqid: c.var.reqid,
  });
});

/** Multiple product search (spec 4.6): every detected object (or the object at each point) gets its own results. */
const discoverSearch = factory.createHandlers(endpoint('discoversearch', { failureFields: noObjects }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const detectionLimit = readParam(c.var.params, DETECTION, 'detection_limit');
  const { options, paging, region, sensitivity, query, analysis, box, mode, search, kept } = await prepare(c, {
    limitName: 'result_limit',
    allowPoints: true,
  });

  let targets: SearchTarget[];
  if (box?.kind === 'object') targets = [asTarget(box.object)];
  else if (box) {
    // Spec 4.6: only the area inside the box is analysed: the objects found there, or the box itself without one.
    const inside = box.inside.slice(0, detectionLimit);
    targets = inside.length > 0 ? inside.map(asTarget) : [regionAsObject(box.content)];
  } else if (mode.kind === 'off') targets = [regionAsObject(analysis.whole)];
  else {
    const objects =
      region.kind === 'points'
        ? [...new Set(region.points.map((point) => objectAt(analysis.objects, mode, point)).filter((object) => object !== undefined))]
        : keptObjects(analysis.objects, mode, sensitivity).slice(0, detectionLimit);
    targets = objects.map(asTarget);
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
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: box?.kind === 'content' ? box.content.box : analysis.whole.box, detection: mode.kind === 'type' ? mode.type : mode.kind } } : {}),
    reqid: c.var.reqid,
  });
});

// An image URL or im_id fits a GET, as the official Python and Android SDKs send them; a file needs a POST, multipart
// or (without a file) urlencoded (docs/decisions.md).
for (const method of ['get', 'post'] as const) {
  imageSearchRoutes[method]('/uploadsearch', ...uploadSearch);
  imageSearchRoutes[method]('/discoversearch', ...discoverSearch);
}
