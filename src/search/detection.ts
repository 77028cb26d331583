import { choice, integer, readParam, text } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import type { DetectedObject } from '../ports/inference/types';
import type { AppRecord } from '../storage/apps';
import { DEFAULT_ATTRIBUTES_LIST } from '@edge-image-search/contract/attributes';
import { boxArea } from '@edge-image-search/contract/boxes';
import { contains, type Point } from './region';

/** `detection` (docs/api.md, POST /discoversearch): `all`/`null` detect every type, a supported type that type, anything else: off. */
export type DetectionMode = { kind: 'off' } | { kind: 'all' } | { kind: 'type'; type: string };

/**
 * Lowest detection score kept by `detection_sensitivity`: `low` keeps only confident objects, `high` more (0.2 is
 * the detector's own floor). Points and boxes name objects among those kept, as `/discoversearch` lists them.
 */
const MIN_SCORE = { low: 0.35, high: 0.2 } as const;
export type Sensitivity = keyof typeof MIN_SCORE;

/**
 * `low`'s floor for the types whose false finds score higher, chosen from `npm run eval`'s detection table on the
 * hand-drawn ground truth (docs/performance.md, "Detection quality"): a Clock was never right (false ones up to 0.52: dials,
 * coins, round signs); garments drawn from a pose are less sure of their extent than of their place: a Bottom runs
 * to the ankles over shorts (false ones up to 0.50), a Shoe box misses the foot's direction (false ones up to 0.66).
 */
const LOW_FLOOR_BY_TYPE: Readonly<Record<string, number>> = { Clock: 0.55, Bottom: 0.5, Shoe: 0.7 };

export const minScore = (type: string, sensitivity: Sensitivity): number =>
  sensitivity === 'low' ? Math.max(MIN_SCORE.low, LOW_FLOOR_BY_TYPE[type] ?? 0) : MIN_SCORE.high;

/** The objects `/discoversearch` searches when `detection_limit` is not given, or ignored (with `point`). */
export const DEFAULT_DETECTION_LIMIT = 5;

/** The detection parameters of the upload searches. */
export const DETECTION = {
  detection: text(
    'A type to detect, or `all` / `null` for every type (the default); any other value turns detection off and ' +
      'the whole image (or box) is searched.',
  ),
  detection_limit: integer(
    { min: 1, max: 30, default: DEFAULT_DETECTION_LIMIT },
    'Objects searched at most, most confident first. Ignored with `point`.',
  ),
  detection_sensitivity: choice(['low', 'high'], 'low', '`low` keeps only very confident objects, `high` more.'),
};

/** The mode a `detection` value asks for; types compare without regard to case. */
export function detectionMode(raw: string | undefined, types: string[]): DetectionMode {
  if (raw === undefined || raw === 'all' || raw === 'null') return { kind: 'all' };
  const type = types.find((candidate) => candidate.toLowerCase() === raw.trim().toLowerCase());
  return type ? { kind: 'type', type } : { kind: 'off' };
}

export const readSensitivity = (params: RequestParams): Sensitivity =>
  readParam(params, DETECTION, 'detection_sensitivity');

const ofMode = (objects: DetectedObject[], mode: DetectionMode): DetectedObject[] =>
  mode.kind === 'off' ? [] : mode.kind === 'all' ? objects : objects.filter((object) => object.type === mode.type);

/** The objects a mode and sensitivity keep, most confident first (the detector answers them in that order). */
export const keptObjects = (objects: DetectedObject[], mode: DetectionMode, sensitivity: Sensitivity): DetectedObject[] =>
  ofMode(objects, mode).filter((object) => object.score >= minScore(object.type, sensitivity));

/** The more confident object first. */
export const byConfidence = (a: DetectedObject, b: DetectedObject): number => b.score - a.score;

/** The object at a point: the smallest one the mode and sensitivity keep that contains it. */
export const objectAt = (objects: DetectedObject[], mode: DetectionMode, sensitivity: Sensitivity, point: Point): DetectedObject | undefined =>
  keptObjects(objects, mode, sensitivity)
    .filter((object) => contains(object.box, point))
    .sort((a, b) => boxArea(a.box) - boxArea(b.box))[0];

/**
 * A detected object as answers show it (docs/api.md, Result items and detected objects). Each attribute's value is
 * answered as a list of the one value chosen: the Java SDK reads `attributes` as a map of lists (docs/decisions.md,
 * "Product types and attributes").
 */
export const describeObject = (object: Pick<DetectedObject, 'type' | 'score' | 'box' | 'attributes'>) => ({
  type: object.type,
  attributes: Object.fromEntries(Object.entries(object.attributes ?? {}).map(([name, value]) => [name, [value]])),
  score: object.score,
  box: object.box,
});

/** What a kept analysis was made under: another list of types since makes it stale (query-analysis.ts). */
export const vocabularyKey = (app: Pick<AppRecord, 'productTypes'>): string => JSON.stringify(app.productTypes);

/**
 * `product_types_list` / `object_types_list`: every type the detection could report, each with the values its
 * attributes may take (the application's `attributes_list`, else the colour names).
 */
export const typeList = (types: string[], app: Pick<AppRecord, 'productTypes'>) =>
  types.map((type) => ({ type, attributes_list: app.productTypes?.find((entry) => entry.type === type)?.attributes_list ?? DEFAULT_ATTRIBUTES_LIST }));
