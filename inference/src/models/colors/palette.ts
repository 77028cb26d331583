import type { PaletteColor } from '@edge-image-search/contract/wire';
import type { RgbPixels } from '../../image/decode.ts';
import { kMeans, nearestCentre, type LabPoints } from './kmeans.ts';
import { labToSrgb, LINEAR, linearRgbToLab, toHex } from '@edge-image-search/contract/lab';

/** The pixels are point-sampled on a grid of at most this many cells along the long side. */
export const COLORS_GRID_MAX_SIDE = 128;
/** Pixels with less alpha than this are transparent and left out. */
export const COLORS_MIN_ALPHA = 128;
/** The border ring the background is estimated from: this share of the width (height) at each side, at least one sample. */
export const COLORS_BORDER_RING = 0.04;
/** A sample within this delta E (CIE76) of the background colour matches it. */
export const COLORS_BACKGROUND_DELTA_E = 10;
/**
 * A sample this close (delta E) to the background colour is background even
 * where it is not connected to the border: the background showing through
 * enclosed gaps (between a cherry pair's stems, inside a frame).
 */
export const COLORS_BACKGROUND_HOLE_DELTA_E = 5;
/** The border counts as a uniform background when at least this share of its ring matches one colour. */
export const COLORS_BACKGROUND_BORDER_SHARE = 0.6;
/**
 * Found background is kept only if the rest (the object) is rarer along the
 * border than inside: its share of the ring at most this times its share of
 * the inner samples. Otherwise the "background" is the ground of a pattern or
 * texture filling the frame (stripes, brick, a print), whose colours are the
 * image's own, and nothing is removed. Cut-outs on white measure 0-0.5, such
 * patterns about 1.
 */
export const COLORS_BACKGROUND_MAX_EDGE_CONTACT = 0.85;
/** If removing the background would leave less than this share of the (opaque) samples, nothing is removed. */
export const COLORS_MIN_FOREGROUND = 0.05;
/** Most k-means clusters; also the most colours reported. */
export const COLORS_MAX_CLUSTERS = 8;
/** Clusters whose centroids are closer than this delta E are merged. */
export const COLORS_MERGE_DELTA_E = 10;
/** Clusters under this share are dropped; their samples count towards the nearest kept colour. */
export const COLORS_MIN_RATIO = 0.03;
/** Seed of the k-means++ generator: the same pixels always give the same palette. */
export const COLORS_SEED = 0x0c0105;
/** Most Lloyd iterations per k-means run. */
export const COLORS_MAX_ITERATIONS = 30;
/** A k-means run has converged when no centroid moves by this much (delta E; far below one sRGB step's worth). */
export const COLORS_CONVERGENCE_DELTA_E = 0.25;

/** Ratios are rounded to this many parts (four decimals). */
const RATIO_UNITS = 10_000;

/** The sampled grid: Lab and RGB of each cell's pixel, and whether it is opaque. */
type Grid = {
  readonly width: number;
  readonly height: number;
  readonly l: Float64Array;
  readonly a: Float64Array;
  readonly b: Float64Array;
  /** 0xrrggbb of the sample, -1 where transparent. */
  readonly rgb: Int32Array;
};

/** A palette and what was left out on the way (shares of the sampled grid). */
export type ColorAnalysis = {
  readonly palette: PaletteColor[];
  /** Share of the samples that are transparent (alpha under COLORS_MIN_ALPHA). */
  readonly transparent: number;
  /** Share of the samples left out as border background (0 when none was found, or when it would have left too little). */
  readonly background: number;
};

/**
 * The dominant colours of some pixels (a whole image or a crop), best first:
 * transparent pixels and a uniform background connected to the border left
 * out, the rest clustered by k-means in CIELAB. Empty only when every pixel
 * is transparent.
 */
export function dominantColors(pixels: RgbPixels): PaletteColor[] {
  return analyzeColors(pixels).palette;
}

/** dominantColors, with the shares of transparent and background samples left out. */
export function analyzeColors(pixels: RgbPixels): ColorAnalysis {
  const grid = sampleGrid(pixels);
  const cells = grid.rgb.length;
  const opaque: number[] = [];
  for (let i = 0; i < cells; i++) if (grid.rgb[i]! >= 0) opaque.push(i);
  const transparent = 1 - opaque.length / cells;
  if (opaque.length === 0) return { palette: [], transparent, background: 0 };
  const mask = backgroundMask(grid);
  let samples = mask ? opaque.filter((i) => !mask[i]) : opaque;
  if (samples.length < COLORS_MIN_FOREGROUND * opaque.length) samples = opaque;
  return { palette: cluster(grid, samples), transparent, background: (opaque.length - samples.length) / cells };
}

/**
 * Point-samples the pixels on a grid of at most COLORS_GRID_MAX_SIDE cells
 * along the long side (every pixel of smaller images): each cell's centre
 * pixel, so no colours are blended across edges. A sample with alpha under
 * COLORS_MIN_ALPHA is transparent; a partly transparent one gets its own
 * colour back from the white-flattened pixel.
 */
function sampleGrid(pixels: RgbPixels): Grid {
  const { data, alpha } = pixels;
  const scale = Math.max(pixels.width, pixels.height) / COLORS_GRID_MAX_SIDE;
  const width = scale > 1 ? Math.max(1, Math.round(pixels.width / scale)) : pixels.width;
  const height = scale > 1 ? Math.max(1, Math.round(pixels.height / scale)) : pixels.height;
  const count = width * height;
  const grid: Grid = {
    width,
    height,
    l: new Float64Array(count),
    a: new Float64Array(count),
    b: new Float64Array(count),
    rgb: new Int32Array(count).fill(-1),
  };
  for (let gy = 0; gy < height; gy++) {
    const y = Math.floor(((gy + 0.5) * pixels.height) / height);
    for (let gx = 0; gx < width; gx++) {
      const x = Math.floor(((gx + 0.5) * pixels.width) / width);
      const pixel = y * pixels.width + x;
      let r = data[pixel * 3]!;
      let g = data[pixel * 3 + 1]!;
      let b = data[pixel * 3 + 2]!;
      if (alpha) {
        const value = alpha[pixel]!;
        if (value < COLORS_MIN_ALPHA) continue;
        if (value < 255) [r, g, b] = [unflatten(r, value), unflatten(g, value), unflatten(b, value)];
      }
      const i = gy * width + gx;
      const [l, labA, labB] = linearRgbToLab(LINEAR[r]!, LINEAR[g]!, LINEAR[b]!);
      grid.l[i] = l;
      grid.a[i] = labA;
      grid.b[i] = labB;
      grid.rgb[i] = (r << 16) | (g << 8) | b;
    }
  }
  return grid;
}

/** A channel's own value from its value flattened onto white (255) at this alpha. */
function unflatten(flattened: number, alpha: number): number {
  return Math.max(0, Math.min(255, Math.round(255 - ((255 - flattened) * 255) / alpha)));
}

/**
 * The uniform background, if the border has one: the colour most of the
 * border ring matches (a mode: the ring sample with the most ring samples
 * within COLORS_BACKGROUND_DELTA_E, refined to their mean); when at least
 * COLORS_BACKGROUND_BORDER_SHARE of the ring matches it, the samples matching
 * it that are connected (4-neighbours) to the image's outer edge, and those
 * anywhere within COLORS_BACKGROUND_HOLE_DELTA_E of it. Null when
 * there is none, when most of the ring is transparent (alpha already tells
 * the background then), when the ring is all there is (tiny crops), or when the rest touches the border as much as it
 * fills the inside (COLORS_BACKGROUND_MAX_EDGE_CONTACT).
 */
function backgroundMask(grid: Grid): Uint8Array | null {
  const { width, height, l, a, b, rgb } = grid;
  const ringX = Math.max(1, Math.round(COLORS_BORDER_RING * width));
  const ringY = Math.max(1, Math.round(COLORS_BORDER_RING * height));
  const ring: number[] = [];
  const inner: number[] = [];
  let ringCells = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inRing = x < ringX || x >= width - ringX || y < ringY || y >= height - ringY;
      if (inRing) ringCells++;
      const i = y * width + x;
      if (rgb[i]! >= 0) (inRing ? ring : inner).push(i);
    }
  }
  if (ring.length < ringCells / 2 || inner.length === 0) return null;

  const limit = COLORS_BACKGROUND_DELTA_E ** 2;
  const near = (i: number, cl: number, ca: number, cb: number) => (l[i]! - cl) ** 2 + (a[i]! - ca) ** 2 + (b[i]! - cb) ** 2 <= limit;
  // Mode: of up to 64 evenly spread candidates, the ring sample most ring samples lie near.
  const step = Math.max(1, Math.floor(ring.length / 64));
  let best = ring[0]!;
  let bestCount = -1;
  for (let k = 0; k < ring.length; k += step) {
    const candidate = ring[k]!;
    let matches = 0;
    for (const i of ring) if (near(i, l[candidate]!, a[candidate]!, b[candidate]!)) matches++;
    if (matches > bestCount) [best, bestCount] = [candidate, matches];
  }
  let [sumL, sumA, sumB, n] = [0, 0, 0, 0];
  for (const i of ring) {
    if (!near(i, l[best]!, a[best]!, b[best]!)) continue;
    [sumL, sumA, sumB, n] = [sumL + l[i]!, sumA + a[i]!, sumB + b[i]!, n + 1];
  }
  const [bl, ba, bb] = [sumL / n, sumA / n, sumB / n];
  let share = 0;
  for (const i of ring) if (near(i, bl, ba, bb)) share++;
  if (share < COLORS_BACKGROUND_BORDER_SHARE * ring.length) return null;

  // Flood fill from the outer edge through opaque samples matching the background.
  const mask = new Uint8Array(width * height);
  const queue = new Int32Array(width * height);
  let [head, tail] = [0, 0];
  const visit = (i: number) => {
    if (mask[i] || rgb[i]! < 0 || !near(i, bl, ba, bb)) return;
    mask[i] = 1;
    queue[tail++] = i;
  };
  for (let x = 0; x < width; x++) [visit(x), visit((height - 1) * width + x)];
  for (let y = 0; y < height; y++) [visit(y * width), visit(y * width + width - 1)];
  while (head < tail) {
    const i = queue[head++]!;
    const x = i % width;
    if (x > 0) visit(i - 1);
    if (x < width - 1) visit(i + 1);
    if (i >= width) visit(i - width);
    if (i < width * (height - 1)) visit(i + width);
  }
  const holeLimit = COLORS_BACKGROUND_HOLE_DELTA_E ** 2;
  for (let i = 0; i < width * height; i++) {
    if (rgb[i]! >= 0 && (l[i]! - bl) ** 2 + (a[i]! - ba) ** 2 + (b[i]! - bb) ** 2 <= holeLimit) mask[i] = 1;
  }

  const restShare = (cells: readonly number[]) => cells.filter((i) => !mask[i]).length / cells.length;
  if (restShare(ring) > COLORS_BACKGROUND_MAX_EDGE_CONTACT * restShare(inner)) return null;
  return mask;
}

/** Point index of each 6-bit-per-channel colour bin while cluster() runs (-1: none yet); reset after each use. */
const binPoint = new Int32Array(1 << 18).fill(-1);

/**
 * k-means over the chosen samples, clusters under COLORS_MIN_RATIO dropped
 * with their samples counted to the nearest kept centroid, ratios rounded to
 * four decimals by largest remainder (so they sum to exactly 1), best first.
 * Samples of nearly the same colour (the same 6 bits per channel) are folded
 * into one weighted point at their mean Lab, so k-means runs over far fewer
 * points while every centroid stays the exact mean of its samples' Lab.
 */
function cluster(grid: Grid, samples: readonly number[]): PaletteColor[] {
  const bins: number[] = [];
  const sums = new Float64Array(samples.length * 4);
  for (const i of samples) {
    const rgb = grid.rgb[i]!;
    const bin = ((rgb >> 6) & 0x3f000) | ((rgb >> 4) & 0xfc0) | ((rgb >> 2) & 0x3f);
    let point = binPoint[bin]!;
    if (point < 0) {
      point = bins.length;
      binPoint[bin] = point;
      bins.push(bin);
    }
    sums[point * 4] = sums[point * 4]! + 1;
    sums[point * 4 + 1] = sums[point * 4 + 1]! + grid.l[i]!;
    sums[point * 4 + 2] = sums[point * 4 + 2]! + grid.a[i]!;
    sums[point * 4 + 3] = sums[point * 4 + 3]! + grid.b[i]!;
  }
  for (const bin of bins) binPoint[bin] = -1;
  const count = bins.length;
  const points: LabPoints = {
    l: Float64Array.from({ length: count }, (_, p) => sums[p * 4 + 1]! / sums[p * 4]!),
    a: Float64Array.from({ length: count }, (_, p) => sums[p * 4 + 2]! / sums[p * 4]!),
    b: Float64Array.from({ length: count }, (_, p) => sums[p * 4 + 3]! / sums[p * 4]!),
    weight: Float64Array.from({ length: count }, (_, p) => sums[p * 4]!),
    count,
  };
  const { centres, weights, assignment } = kMeans(points, {
    maxClusters: COLORS_MAX_CLUSTERS,
    mergeDeltaE: COLORS_MERGE_DELTA_E,
    maxIterations: COLORS_MAX_ITERATIONS,
    convergenceDeltaE: COLORS_CONVERGENCE_DELTA_E,
    seed: COLORS_SEED,
  });

  const total = samples.length;
  const kept = weights.map((_, c) => c).filter((c) => weights[c]! >= COLORS_MIN_RATIO * total);
  const keptCentres = kept.flatMap((c) => [centres[c * 3]!, centres[c * 3 + 1]!, centres[c * 3 + 2]!]);
  const mass = kept.map((c) => weights[c]!);
  const keptIndex = new Map(kept.map((c, k) => [c, k]));
  for (let i = 0; i < points.count; i++) {
    if (keptIndex.has(assignment[i]!)) continue;
    const k = nearestCentre(keptCentres, points.l[i]!, points.a[i]!, points.b[i]!);
    mass[k] = mass[k]! + points.weight[i]!;
  }

  const colors = kept.map((_, k) => ({
    hex: toHex(labToSrgb([keptCentres[k * 3]!, keptCentres[k * 3 + 1]!, keptCentres[k * 3 + 2]!])),
    units: Math.floor((mass[k]! / total) * RATIO_UNITS),
    remainder: ((mass[k]! / total) * RATIO_UNITS) % 1,
    mass: mass[k]!,
  }));
  let missing = RATIO_UNITS - colors.reduce((sum, color) => sum + color.units, 0);
  for (const color of [...colors].sort((p, q) => q.remainder - p.remainder || q.mass - p.mass)) {
    if (missing <= 0) break;
    color.units++;
    missing--;
  }
  return colors
    .sort((p, q) => q.units - p.units || q.mass - p.mass || (p.hex < q.hex ? -1 : 1))
    .map(({ hex, units }) => ({ hex, ratio: units / RATIO_UNITS }));
}
