/**
 * Colour palettes as vectors, so colour search runs on the same vector index port as visual search.
 *
 * A palette (colours with ratios) becomes a soft histogram over a fixed grid of CIELAB reference colours: each
 * colour spreads its ratio over nearby grid colours with a Gaussian of ΔE. The vector holds the square roots of the
 * bin masses, L2-normalised, so the cosine of two vectors is the Bhattacharyya coefficient of the two smoothed
 * distributions: 1.0 for the same palette, falling as colours move apart in Lab or change their shares.
 *
 * Colours go to Lab by the inference service's own conversion, the one its palettes are measured in.
 */

import { hexToLab } from '@edge-image-search/contract/lab';
import type { PaletteColor } from '../ports/inference/types';
import { PALETTE_GRID } from './palette-grid';

/** Spread of one colour over the grid, in ΔE: about one grid step, so nearby shades overlap. */
const SIGMA = 14;

/** The palette's vector; ratios need not sum to 1. */
export function paletteVector(palette: PaletteColor[]): number[] {
  const mass = new Array<number>(PALETTE_GRID.length).fill(0);
  for (const { hex, ratio } of palette) {
    const [l, a, b] = hexToLab(hex);
    const kernel = PALETTE_GRID.map(([gl, ga, gb]) => Math.exp(-((l - gl) ** 2 + (a - ga) ** 2 + (b - gb) ** 2) / (2 * SIGMA * SIGMA)));
    const total = kernel.reduce((sum, value) => sum + value, 0) || 1;
    kernel.forEach((value, i) => (mass[i]! += (ratio * value) / total));
  }
  const roots = mass.map(Math.sqrt);
  const norm = Math.hypot(...roots) || 1;
  return roots.map((value) => value / norm);
}
