/**
 * How much boxes [x1, y1, x2, y2] overlap. Shared with the Worker, which matches a searched box to a detected object
 * by them, so it imports nothing.
 */

export const boxArea = (box: readonly number[]): number => (box[2]! - box[0]!) * (box[3]! - box[1]!);

/** The area two boxes share. */
export function intersectionArea(a: readonly number[], b: readonly number[]): number {
  const width = Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!);
  const height = Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!);
  return width > 0 && height > 0 ? width * height : 0;
}

/** Intersection over union: how much two boxes are one object. */
export function iou(a: readonly number[], b: readonly number[]): number {
  const intersection = intersectionArea(a, b);
  return intersection === 0 ? 0 : intersection / (boxArea(a) + boxArea(b) - intersection);
}
