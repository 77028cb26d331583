import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { iou } from '@edge-image-search/contract/boxes';
import { ROOT } from './wrangler-env.ts';

/**
 * The detection ground truth drawn by hand (test/fixtures/detection-truth.json, how it was made in
 * test/fixtures/README.md) and its scoring: precision and recall at IoU 0.5, per type, the way detection
 * benchmarks count them.
 */

export const FIXTURES_DIR = path.join(ROOT, 'test/fixtures');
/** A detection and a drawn box of its type are the same object from this overlap on. */
const MATCH_IOU = 0.5;

type Box = [number, number, number, number];
type TruthObject = { type: string; box: Box };
/** One labelled photo: `file` relative to test/fixtures/; `unsure` objects count neither as found nor as missed. */
export type TruthImage = { file: string; objects: TruthObject[]; unsure: TruthObject[] };
type DetectionTruth = { note: string; people: string[]; images: TruthImage[] };
export type Detected = { type: string; score: number; box: number[] };

export async function loadDetectionTruth(): Promise<DetectionTruth> {
  return JSON.parse(await readFile(path.join(FIXTURES_DIR, 'detection-truth.json'), 'utf8')) as DetectionTruth;
}

/** Per type: true positives (with their scores), false positives (with theirs), and drawn objects missed. */
export type TypeCounts = { tp: number[]; fp: number[]; fn: number };

/**
 * Matches one image's detections to its drawn objects, most confident first: a detection takes the unmatched drawn
 * object of its type it overlaps most (IoU 0.5 or more); one that overlaps an `unsure` object of its type instead
 * is left out; any other is a false positive. Drawn objects left unmatched are misses.
 */
export function scoreImage(truth: TruthImage, detected: readonly Detected[], into: Map<string, TypeCounts>): void {
  const counts = (type: string): TypeCounts => {
    let entry = into.get(type);
    if (!entry) into.set(type, (entry = { tp: [], fp: [], fn: 0 }));
    return entry;
  };
  const unmatched = new Set(truth.objects);
  for (const detection of [...detected].sort((a, b) => b.score - a.score)) {
    let best: TruthObject | undefined;
    let bestOverlap = 0;
    for (const object of unmatched) {
      const overlap = object.type === detection.type ? iou(object.box, detection.box) : 0;
      if (overlap >= MATCH_IOU && overlap > bestOverlap) [best, bestOverlap] = [object, overlap];
    }
    if (best) {
      unmatched.delete(best);
      counts(detection.type).tp.push(detection.score);
    } else if (!truth.unsure.some((object) => object.type === detection.type && iou(object.box, detection.box) >= MATCH_IOU)) {
      counts(detection.type).fp.push(detection.score);
    }
  }
  for (const object of unmatched) counts(object.type).fn++;
}

type PrecisionRecall = { truth: number; found: number; tp: number; precision: number | null; recall: number | null };

export function precisionRecall({ tp, fp, fn }: TypeCounts): PrecisionRecall {
  const found = tp.length + fp.length;
  const truth = tp.length + fn;
  return { truth, found, tp: tp.length, precision: found ? tp.length / found : null, recall: truth ? tp.length / truth : null };
}

/** Every type's counts added up. */
export function overall(counts: Iterable<TypeCounts>): TypeCounts {
  const total: TypeCounts = { tp: [], fp: [], fn: 0 };
  for (const { tp, fp, fn } of counts) {
    total.tp.push(...tp);
    total.fp.push(...fp);
    total.fn += fn;
  }
  return total;
}
