import { Hono, type Context } from 'hono';
import { createFactory } from 'hono/factory';
import { wrapTime } from 'hono/timing';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { endpoint } from '../http/middleware';
import { readParam } from '../http/param-schema';
import type { DetectedObject } from '../ports/inference/types';
import {
  byConfidence,
  DEFAULT_DETECTION_LIMIT,
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
import { analyzeBox, analyzeImage, type BoxAnalysis, type QueryRegion } from '../search/query-analysis';
import { keepQueryImage, resolveQueryImage } from '../search/query-image';
import { readRegion } from '../search/region';
import { searchSimilar } from '../search/similar';
import { embedQueryText, readQueryText, steer } from '../search/text-query';
import { getSchema } from '../storage/apps';

export const imageSearchRoutes = new Hono<AppEnv>();
const factory = createFactory<AppEnv>();


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
  // Spec 4.6: group_by is not supported by /discoversearch, the one endpoint with points.
  const options = readSearchOptions(params, await getSchema(c.env.DB, app.id), app, {
    limitName: endpoint.limitName,
    allowGroupBy: !endpoint.allowPoints,
  });
  const region = readRegion(params, { allowPoints: endpoint.allowPoints });
  const sensitivity = readSensitivity(params);
  const detection = readParam(params, DETECTION, 'detection');
  const text = readQueryText(params, { required: false });
  await requireCollection(c.env.DB, app.id);

  const analysed = (async () => {
    const query = await wrapTime(c, 'image', resolveQueryImage(c.env, app, params, c.var.queryBytesLeft));
    return { query, analysis: query.analysis ?? (await wrapTime(c, 'inference', analyzeImage(c.env, await query.bytes(), app.embedModel))) };
  })();
  // The text is embedded while the image is read and analysed; a model that reads none fails before anything is kept.
  const [{ query, analysis }, textVector] = await Promise.all([
    analysed,
    text === undefined ? undefined : wrapTime(c, 'text', embedQueryText(c.env, text, app.embedModel)),
  ]);
  const mode = detectionMode(detection, analysis.types);
  const box = region.kind === 'box' ? analyzeBox(c.env, query.bytes, region.box, analysis, { mode, sensitivity }) : undefined;
  const content = box && endpoint.searchesContent(box) ? await wrapTime(c, 'box', box.content()) : undefined;
  // Kept while the index is searched (each route awaits both): the answer still names an im_id that is there.
  const kept = wrapTime(c, 'keep', keepQueryImage(c.env, app.id, query, analysis));
  const search = (vector: number[], objectType: string | undefined) =>
    searchSimilar(c.env, { appId: app.id, embedModel: app.embedModel, space: 'visual', vector: textVector ? steer(vector, textVector) : vector, objectType }, options);
  return { options, paging: options.paging, region, sensitivity, query, analysis, box, content, mode, search, kept, text };
}

type SearchTarget = { object: Pick<DetectedObject, 'type' | 'score' | 'box' | 'embedding'>; objectType: string | undefined };
const asTarget = (object: DetectedObject): SearchTarget => ({ object, objectType: object.type });

/** A searched region that is no detected object, as the answers show it: `other`, unless an object fills it. */
const regionAsObject = (region: QueryRegion, filling?: DetectedObject): SearchTarget => ({
  object: { type: filling?.type ?? 'other', score: filling?.score ?? 1, ...region },
  objectType: filling?.type,
});

/** Search by image (spec 4.5): the primary object, the object at a point, or what the box names, is searched. */
const uploadSearch = factory.createHandlers(endpoint('uploadsearch', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { options, paging, region, sensitivity, analysis, query, box, content, mode, search, kept, text } = await prepare(c, {
    limitName: 'limit',
    allowPoints: false,
    // A box around no detected object is searched as its own content.
    searchesContent: (box) => box.named === undefined,
  });
  // Spec 4.5: `product_types` lists the detected objects; the first is the one searched.
  let detected: SearchTarget[];
  if (box?.named) detected = [asTarget(box.named)];
  else if (content) detected = [regionAsObject(content.region, content.filling)];
  else if (region.kind === 'points') detected = [objectAt(analysis.objects, mode, sensitivity, region.points[0]!)].filter((object) => object !== undefined).map(asTarget);
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
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: searched.box, type: target?.objectType ?? null, ...(text && { q: text }) } } : {}),
    reqid: c.var.reqid,
  });
});

/**
 * Multiple product search (spec 4.6): every detected object (or the object at each point) gets its own results. A box
 * lists the objects in it, the one it is drawn around among them; a box with none is analysed on its own.
 */
const discoverSearch = factory.createHandlers(endpoint('discoversearch', { failureFields: noObjects }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  // Spec 4.6: ignored when `point` is present, so not checked then either.
  const detectionLimit = c.var.params.has('point') ? DEFAULT_DETECTION_LIMIT : readParam(c.var.params, DETECTION, 'detection_limit');
  const { options, paging, region, sensitivity, query, analysis, box, content, mode, search, kept, text } = await prepare(c, {
    limitName: 'result_limit',
    allowPoints: true,
    searchesContent: (box) => box.named === undefined && box.within.length === 0,
  });

  let targets: SearchTarget[];
  if (content) targets = content.inside.length > 0 ? content.inside.slice(0, detectionLimit).map(asTarget) : [regionAsObject(content.region)];
  else if (box) {
    // Spec 4.6: the more confident objects first; the one the box is drawn around is always among them.
    const others = box.within.slice(0, detectionLimit - (box.named ? 1 : 0));
    targets = [...(box.named ? [box.named] : []), ...others].sort(byConfidence).map(asTarget);
  }
  else if (mode.kind === 'off') targets = [regionAsObject(analysis.whole)];
  else {
    const objects =
      region.kind === 'points'
        ? [...new Set(region.points.map((point) => objectAt(analysis.objects, mode, sensitivity, point)).filter((object) => object !== undefined))]
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
  const searchedBox = box?.named?.box ?? content?.region.box ?? (region.kind === 'box' ? region.box : analysis.whole.box);
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
    ...(options.qinfo ? { qinfo: { im_id: query.imId, box: searchedBox, detection: mode.kind === 'type' ? mode.type : mode.kind, ...(text && { q: text }) } } : {}),
    reqid: c.var.reqid,
  });
});

// An image URL or im_id fits a GET, as the official Python and Android SDKs send them; a file needs a POST, multipart
// or (without a file) urlencoded (docs/decisions.md).
for (const method of ['get', 'post'] as const) {
  imageSearchRoutes[method]('/uploadsearch', ...uploadSearch);
  imageSearchRoutes[method]('/discoversearch', ...discoverSearch);
}
