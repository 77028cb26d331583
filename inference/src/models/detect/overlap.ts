/**
 * Intersection over union of two boxes [x1, y1, x2, y2]: how much two boxes are one object. Shared with the Worker,
 * which matches a searched box to a detected object by it, so it imports nothing.
 */
export function iou(a: readonly number[], b: readonly number[]): number {
  const width = Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!);
  const height = Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!);
  if (width <= 0 || height <= 0) return 0;
  const intersection = width * height;
  const area = (box: readonly number[]) => (box[2]! - box[0]!) * (box[3]! - box[1]!);
  return intersection / (area(a) + area(b) - intersection);
}
