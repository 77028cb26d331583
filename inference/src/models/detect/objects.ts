import { MAX_DETECTED_OBJECTS } from '@edge-image-search/contract/wire';
import type { Box, ImageView } from '../../image/view.ts';
import type { Detection } from './detector.ts';
import { iou } from '@edge-image-search/contract/boxes';

/** Detections scoring below this are not reported (human's own default for this model). */
export const DETECT_MIN_SCORE = 0.2;
/** Of two boxes of the same type overlapping more than this (IoU), the weaker is dropped. */
export const DETECT_NMS_IOU = 0.5;

export type MappedObject = {
  /** A product type: the API's, or one of an application's own (an open-vocabulary detector's prompts name it). */
  readonly type: string;
  readonly label: string;
  readonly score: number;
  /** Integers in original pixels, inside the view: [x1, y1, x2, y2] with x2 > x1, y2 > y1. */
  readonly box: Box;
};

/**
 * From raw detections on a view's pixels to reported objects: labels mapped
 * to types (unmapped ones dropped), the score floor, boxes moved to original
 * pixels, clamped to the view and rounded, per-type non-maximum suppression,
 * then the best MAX_DETECTED_OBJECTS by score.
 */
export function selectObjects(detections: readonly Detection[], labelMap: ReadonlyMap<string, string>, view: ImageView): MappedObject[] {
  const candidates: MappedObject[] = [];
  for (const detection of detections) {
    const type = labelMap.get(detection.label);
    if (type === undefined || !(detection.score >= DETECT_MIN_SCORE)) continue;
    const box = toOriginalPixels(detection.box, view);
    if (box) candidates.push({ type, label: detection.label, score: detection.score, box });
  }
  return keepDistinct(candidates, MAX_DETECTED_OBJECTS);
}

/**
 * The best `max` of the candidates by score, each one dropped that overlaps a better one of its type by more than
 * DETECT_NMS_IOU (non-maximum suppression).
 */
export function keepDistinct<T extends { readonly type: string; readonly score: number; readonly box: Box }>(candidates: readonly T[], max: number): T[] {
  const kept: T[] = [];
  for (const candidate of [...candidates].sort((a, b) => b.score - a.score)) {
    if (kept.length === max) break;
    const suppressed = kept.some((other) => other.type === candidate.type && iou(other.box, candidate.box) > DETECT_NMS_IOU);
    if (!suppressed) kept.push(candidate);
  }
  return kept;
}

/** A box in the view's pixel coordinates as integers in original pixels, clamped to the view; null if empty. */
export function toOriginalPixels(box: Box, view: ImageView): Box | null {
  const [vx1, vy1, vx2, vy2] = view.box;
  const scaleX = (vx2 - vx1) / view.pixels.width;
  const scaleY = (vy2 - vy1) / view.pixels.height;
  const x = (value: number) => Math.round(Math.min(Math.max(vx1 + value * scaleX, vx1), vx2));
  const y = (value: number) => Math.round(Math.min(Math.max(vy1 + value * scaleY, vy1), vy2));
  const result: Box = [x(box[0]), y(box[1]), x(box[2]), y(box[3])];
  return result[2] > result[0] && result[3] > result[1] ? result : null;
}

/** A box in original pixels in the view's pixel coordinates: the inverse of toOriginalPixels, unrounded and unclamped. */
export function toViewPixels(box: Box, view: ImageView): Box {
  const [vx1, vy1, vx2, vy2] = view.box;
  const scaleX = view.pixels.width / (vx2 - vx1);
  const scaleY = view.pixels.height / (vy2 - vy1);
  return [(box[0] - vx1) * scaleX, (box[1] - vy1) * scaleY, (box[2] - vx1) * scaleX, (box[3] - vy1) * scaleY];
}

/** Share of each side added around an object's box for its embedding crop. */
export const CROP_MARGIN = 0.1;

/** An object's box widened by CROP_MARGIN on every side and clamped to the view. */
export function cropBoxWithMargin(box: Box, view: ImageView): Box {
  const marginX = (box[2] - box[0]) * CROP_MARGIN;
  const marginY = (box[3] - box[1]) * CROP_MARGIN;
  const [vx1, vy1, vx2, vy2] = view.box;
  return [
    Math.max(vx1, box[0] - marginX),
    Math.max(vy1, box[1] - marginY),
    Math.min(vx2, box[2] + marginX),
    Math.min(vy2, box[3] + marginY),
  ];
}
