/**
 * Colour palettes as vectors, so colour search runs on the same vector index port as visual search.
 *
 * A palette (colours with ratios) becomes a soft histogram over a fixed grid of CIELAB reference colours: each
 * colour spreads its ratio over nearby grid colours with a Gaussian of ΔE. The vector holds the square roots of the
 * bin masses, L2-normalised, so the cosine of two vectors is the Bhattacharyya coefficient of the two smoothed
 * distributions: 1.0 for the same palette, falling as colours move apart in Lab or change their shares.
 */

import type { PaletteColor } from '../ports/inference/types';

type Lab = [number, number, number];

/** The reference grid: L in 5 steps, a and b in 9 steps each; 405 dimensions, well under Vectorize's 1536. */
const GRID: Lab[] = [10, 30, 50, 70, 90].flatMap((l) =>
  [-80, -60, -40, -20, 0, 20, 40, 60, 80].flatMap((a) => [-80, -60, -40, -20, 0, 20, 40, 60, 80].map((b): Lab => [l, a, b])),
);
/** Dimensions of a palette vector: the colour index is created with this many. */
export const PALETTE_VECTOR_DIM = GRID.length;
/** Spread of one colour over the grid, in ΔE: about one grid step, so nearby shades overlap. */
const SIGMA = 14;

export const HEX_COLOR = /^[0-9a-fA-F]{6}$/;

/** sRGB (D65) to CIELAB, by the standard formulas. */
export function hexToLab(hex: string): Lab {
  const linear = [0, 2, 4].map((offset) => {
    const channel = Number.parseInt(hex.slice(offset, offset + 2), 16) / 255;
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const [r, g, b] = linear;
  const xyz = [
    (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
    0.2126729 * r + 0.7151522 * g + 0.072175 * b,
    (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / 1.08883,
  ].map((t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116)) as [number, number, number];
  return [116 * xyz[1] - 16, 500 * (xyz[0] - xyz[1]), 200 * (xyz[1] - xyz[2])];
}

/** The palette's vector; ratios need not sum to 1. */
export function paletteVector(palette: PaletteColor[]): number[] {
  const mass = new Array<number>(GRID.length).fill(0);
  for (const { hex, ratio } of palette) {
    const [l, a, b] = hexToLab(hex);
    const kernel = GRID.map(([gl, ga, gb]) => Math.exp(-((l - gl) ** 2 + (a - ga) ** 2 + (b - gb) ** 2) / (2 * SIGMA * SIGMA)));
    const total = kernel.reduce((sum, value) => sum + value, 0) || 1;
    kernel.forEach((value, i) => (mass[i]! += (ratio * value) / total));
  }
  const roots = mass.map(Math.sqrt);
  const norm = Math.hypot(...roots) || 1;
  return roots.map((value) => value / norm);
}
