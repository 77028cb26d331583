/**
 * The reference grid of palette vectors (palette-vector.ts): CIELAB colours, L in 5 steps, a and b in 9 steps each.
 * It imports nothing at run time, so that scripts run by Node (setup-vectorize.ts) can read the colour index's
 * dimensions from it.
 */
import type { Lab } from '@edge-image-search/contract/lab';

export const PALETTE_GRID: readonly Lab[] = [10, 30, 50, 70, 90].flatMap((l) =>
  [-80, -60, -40, -20, 0, 20, 40, 60, 80].flatMap((a) => [-80, -60, -40, -20, 0, 20, 40, 60, 80].map((b): Lab => [l, a, b])),
);

/** Dimensions of a palette vector, 405, well under Vectorize's 1536: the colour index is created with this many. */
export const PALETTE_VECTOR_DIM = PALETTE_GRID.length;
