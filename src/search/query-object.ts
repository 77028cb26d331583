import type { DetectedObject } from '../ports/inference/types';
import { byConfidence, keptObjects, objectAt, type DetectionMode, type Sensitivity } from './detection';
import type { BoxAnalysis, BoxContent, QueryAnalysis, QueryRegion } from './query-analysis';
import type { Region } from './region';

/**
 * Which objects of a query image the upload searches search (docs/api.md, the upload searches): the primary object,
 * the object at a point, what a box is drawn around or holds, or the area itself when it names no object.
 */

/** An object searched, as the answer describes it, and the object type its results are searched among. */
export type SearchTarget = { object: Pick<DetectedObject, 'type' | 'score' | 'box' | 'embedding'>; objectType: string | undefined };

/** What the query image and the request give to choose from. */
export type QueryObjects = {
  analysis: QueryAnalysis;
  region: Region;
  mode: DetectionMode;
  sensitivity: Sensitivity;
  /** What the box names, with a box. */
  box: BoxAnalysis | undefined;
  /** The box's own content, when the search analysed it. */
  content: BoxContent | undefined;
};

const asTarget = (object: DetectedObject): SearchTarget => ({ object, objectType: object.type });

/** A searched region that is no detected object, as the answers show it: `other`, unless an object fills it. */
const regionAsObject = (region: QueryRegion, filling?: DetectedObject): SearchTarget => ({
  object: { type: filling?.type ?? 'other', score: filling?.score ?? 1, ...region },
  objectType: filling?.type,
});

/** `/uploadsearch` analyses a box's content when no detected object is drawn around it. */
export const uploadSearchesContent = (box: BoxAnalysis): boolean => box.named === undefined;

/** `/discoversearch` analyses a box's content when the box holds no detected object at all. */
export const discoverSearchesContent = (box: BoxAnalysis): boolean => box.named === undefined && box.within.length === 0;

/**
 * `/uploadsearch` (docs/api.md, POST /uploadsearch): `product_types` lists the detected objects; the first is the one searched. None: the
 * whole image is searched.
 */
export function uploadSearchTargets({ analysis, region, mode, sensitivity, box, content }: QueryObjects): SearchTarget[] {
  if (box?.named) return [asTarget(box.named)];
  if (content) return [regionAsObject(content.region, content.filling)];
  if (region.kind === 'points') return [objectAt(analysis.objects, mode, sensitivity, region.points[0]!)].filter((object) => object !== undefined).map(asTarget);
  return keptObjects(analysis.objects, mode, sensitivity).map(asTarget);
}

/**
 * `/discoversearch` (docs/api.md, POST /discoversearch): every detected object, or the object at each point, up to `detectionLimit`. A box
 * lists the objects in it, the one it is drawn around among them; a box with none is searched as its own content.
 */
export function discoverSearchTargets({ analysis, region, mode, sensitivity, box, content }: QueryObjects, detectionLimit: number): SearchTarget[] {
  if (content) return content.inside.length > 0 ? content.inside.slice(0, detectionLimit).map(asTarget) : [regionAsObject(content.region)];
  if (box) {
    // The more confident objects first; the one the box is drawn around is always among them.
    const others = box.within.slice(0, detectionLimit - (box.named ? 1 : 0));
    return [...(box.named ? [box.named] : []), ...others].sort(byConfidence).map(asTarget);
  }
  if (mode.kind === 'off') return [regionAsObject(analysis.whole)];
  const objects =
    region.kind === 'points'
      ? [...new Set(region.points.map((point) => objectAt(analysis.objects, mode, sensitivity, point)).filter((object) => object !== undefined))]
      : keptObjects(analysis.objects, mode, sensitivity).slice(0, detectionLimit);
  return objects.map(asTarget);
}

/** The box `/discoversearch`'s qinfo reports: what was searched as the box, or the whole image. */
export function discoverSearchedBox({ analysis, region, box, content }: QueryObjects) {
  return box?.named?.box ?? content?.region.box ?? (region.kind === 'box' ? region.box : analysis.whole.box);
}
