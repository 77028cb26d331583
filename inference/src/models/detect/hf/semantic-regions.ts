import type { Box } from '../../../image/view.ts';
import type { Float32Tensor } from '../../../runtime/runtime.ts';

/*
 * A semantic segmenter's logits turned into regions: transformers' `post_process_semantic_segmentation` (the logits
 * upsampled bilinearly to the target size, argmax per pixel), then each class's connected regions with their boxes.
 */

/** Each pixel's class (argmax) at the target size, and that class's softmax probability there. */
export type SemanticMap = {
  readonly width: number;
  readonly height: number;
  /** The number of classes (the logits' channels). */
  readonly classes: number;
  /** Row-major class index per pixel. */
  readonly classMap: Uint16Array;
  /** Row-major softmax probability of the pixel's class, over the upsampled logits. */
  readonly probabilities: Float32Array;
};

/** One axis of a bilinear resize: each output position's two source taps and the weight of the second. */
type Taps = { readonly low: Int32Array; readonly high: Int32Array; readonly highWeight: Float64Array };

/**
 * PyTorch's `upsample_bilinear2d` taps with align_corners=False (what transformers' SegFormer post-processing calls):
 * source = (dst + 0.5) * in / out - 0.5, clamped at 0; the second tap is the next source position, or the same one
 * at the last. No antialiasing, so a smaller target (a crop smaller than the logits) samples as PyTorch does.
 */
function linearTaps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const low = new Int32Array(outSize);
  const high = new Int32Array(outSize);
  const highWeight = new Float64Array(outSize);
  for (let dst = 0; dst < outSize; dst++) {
    const real = Math.max(scale * (dst + 0.5) - 0.5, 0);
    const index = Math.min(Math.floor(real), inSize - 1);
    low[dst] = index;
    high[dst] = index < inSize - 1 ? index + 1 : index;
    highWeight[dst] = real - index;
  }
  return { low, high, highWeight };
}

/**
 * The class map of logits [1, C, h, w] at width x height, as transformers computes it (Python's
 * `SegformerImageProcessor.post_process_semantic_segmentation` with that target size: bilinear, align_corners False,
 * then argmax, the first class on ties), with each pixel's softmax probability of its class beside. Computed a row
 * at a time (never the C x height x width upsampled logits: 300 MB for 18 classes on a 2048 px image), in
 * float64 where PyTorch works in float32: the argmax can differ only where two classes' logits tie within float32's
 * rounding.
 */
export function semanticSegmentation(logits: Float32Tensor, width: number, height: number): SemanticMap {
  const [batch, classes, rows, columns] = logits.shape;
  if (logits.shape.length !== 4 || batch !== 1 || !classes || !rows || !columns) {
    throw new Error(`logits of shape [${logits.shape.join(', ')}], not [1, C, h, w]`);
  }
  const { data } = logits;
  const plane = rows * columns;
  const xs = linearTaps(columns, width);
  const ys = linearTaps(rows, height);
  const classMap = new Uint16Array(width * height);
  const probabilities = new Float32Array(width * height);
  // Each output row's logits interpolated between its two source rows first (C x w values), then each pixel between
  // two columns of those: the same bilinear value as PyTorch's (columns first), up to float64 rounding.
  const row = new Float64Array(classes * columns);
  const values = new Float64Array(classes);
  for (let y = 0; y < height; y++) {
    const top = ys.low[y]! * columns;
    const bottom = ys.high[y]! * columns;
    const wy = ys.highWeight[y]!;
    for (let c = 0; c < classes; c++) {
      for (let i = 0; i < columns; i++) row[c * columns + i] = (1 - wy) * data[c * plane + top + i]! + wy * data[c * plane + bottom + i]!;
    }
    for (let x = 0; x < width; x++) {
      const left = xs.low[x]!;
      const right = xs.high[x]!;
      const wx = xs.highWeight[x]!;
      let best = 0;
      for (let c = 0; c < classes; c++) {
        values[c] = (1 - wx) * row[c * columns + left]! + wx * row[c * columns + right]!;
        if (values[c]! > values[best]!) best = c;
      }
      let sum = 0;
      for (let c = 0; c < classes; c++) sum += Math.exp(values[c]! - values[best]!);
      const pixel = y * width + x;
      classMap[pixel] = best;
      probabilities[pixel] = 1 / sum;
    }
  }
  return { width, height, classes, classMap, probabilities };
}

/** A connected region of one class: its pixels' count, box and mean probability of the class. */
export type Region = {
  readonly classIndex: number;
  readonly area: number;
  /** [x1, y1, x2, y2], pixel edges: the region's pixels span x1 <= x < x2. */
  readonly box: Box;
  readonly score: number;
};

/** The 8 neighbours' offsets. */
const NEIGHBOURS = [[-1, -1], [0, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [0, 1], [1, 1]] as const;

/**
 * Every connected region (8-connectivity: pixels touching at a corner are one region, so a garment's thin diagonal
 * part, a strap or a belt at an angle, that the argmax leaves joined only at corners stays one object) of each class
 * `counts` accepts, of at least `minArea` pixels. Its score is the mean of its class's softmax probability over its
 * pixels: a region the model is sure of throughout scores near 1, one it hesitated on (argmax barely won) lower.
 */
export function semanticRegions(map: SemanticMap, counts: (classIndex: number) => boolean, minArea: number): Region[] {
  const { width, height, classMap, probabilities } = map;
  const seen = new Uint8Array(width * height);
  const stack = new Int32Array(width * height);
  const regions: Region[] = [];
  for (let start = 0; start < classMap.length; start++) {
    const classIndex = classMap[start]!;
    if (seen[start] || !counts(classIndex)) continue;
    // A depth-first fill from `start`: every pixel enters the stack once (marked seen when pushed).
    let size = 1;
    stack[0] = start;
    seen[start] = 1;
    let area = 0;
    let sum = 0;
    let [x1, y1, x2, y2] = [width, height, 0, 0];
    while (size > 0) {
      const pixel = stack[--size]!;
      const x = pixel % width;
      const y = (pixel - x) / width;
      area++;
      sum += probabilities[pixel]!;
      x1 = Math.min(x1, x);
      y1 = Math.min(y1, y);
      x2 = Math.max(x2, x + 1);
      y2 = Math.max(y2, y + 1);
      for (const [dx, dy] of NEIGHBOURS) {
        const nx = x + dx;
        const ny = y + dy;
        if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
        const neighbour = ny * width + nx;
        if (seen[neighbour] || classMap[neighbour] !== classIndex) continue;
        seen[neighbour] = 1;
        stack[size++] = neighbour;
      }
    }
    if (area >= minArea) regions.push({ classIndex, area, box: [x1, y1, x2, y2], score: sum / area });
  }
  return regions;
}
