/**
 * Weighted k-means in CIELAB (Euclidean distance = CIE76 delta E): k-means++
 * seeding from a seeded generator, Lloyd iterations, then merging of
 * centroids closer than a delta E.
 */
import { seededRandom } from '../../random.ts';

/** Points in Lab, each with a weight (how many samples it stands for). */
export type LabPoints = {
  readonly l: Float64Array;
  readonly a: Float64Array;
  readonly b: Float64Array;
  readonly weight: Float64Array;
  readonly count: number;
};

export type Clustering = {
  /** Centroids as [l, a, b, l, a, b, ...]. */
  readonly centres: number[];
  /** Total weight of each cluster's points. */
  readonly weights: number[];
  /** The cluster of each point. */
  readonly assignment: Int32Array;
};

export type KMeansOptions = {
  /** Most clusters seeded. */
  readonly maxClusters: number;
  /** Centroids closer than this (delta E) are merged, and the clustering rerun. */
  readonly mergeDeltaE: number;
  /** Most Lloyd iterations per run. */
  readonly maxIterations: number;
  /** Lloyd's iterations stop once no centroid moves by this much (delta E). */
  readonly convergenceDeltaE: number;
  /** Seed of the generator picking the k-means++ centres. */
  readonly seed: number;
};


/**
 * Clusters the points: k-means++ seeds (at most maxClusters, fewer when the
 * points hold fewer distinct colours), Lloyd's iterations; then, while some
 * centroids are closer than mergeDeltaE, the closest two are merged
 * (repeatedly, closest pair first, until none is that close) and Lloyd's
 * iterations rerun from the merged centroids. Deterministic for given points
 * and options.
 */
export function kMeans(points: LabPoints, options: KMeansOptions): Clustering {
  let clustering = lloyd(points, seedPlusPlus(points, options.maxClusters, seededRandom(options.seed)), options);
  for (;;) {
    const merged = mergeClose(clustering, options.mergeDeltaE);
    if (merged.length === clustering.centres.length) return clustering;
    clustering = lloyd(points, merged, options);
  }
}

/** k-means++: the first centre drawn by weight, each next one by weight times squared distance to the nearest centre. */
function seedPlusPlus(points: LabPoints, maxClusters: number, random: () => number): number[] {
  const { l, a, b, weight, count } = points;
  const nearest = new Float64Array(count).fill(Infinity);
  const centres: number[] = [];
  let index = pick(weight, count, random);
  while (index >= 0) {
    centres.push(l[index]!, a[index]!, b[index]!);
    if (centres.length / 3 === maxClusters) break;
    const [cl, ca, cb] = [l[index]!, a[index]!, b[index]!];
    const potential = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const d = (l[i]! - cl) ** 2 + (a[i]! - ca) ** 2 + (b[i]! - cb) ** 2;
      if (d < nearest[i]!) nearest[i] = d;
      potential[i] = weight[i]! * nearest[i]!;
    }
    index = pick(potential, count, random);
  }
  return centres;
}

/** An index drawn with probability proportional to `mass`; -1 when the total mass is (nearly) zero. */
function pick(mass: Float64Array, count: number, random: () => number): number {
  let total = 0;
  for (let i = 0; i < count; i++) total += mass[i]!;
  // Below this every point sits (within float error) on a centre: no further distinct colour.
  if (!(total > 1e-9)) return -1;
  let target = random() * total;
  let last = -1;
  for (let i = 0; i < count; i++) {
    if (mass[i]! <= 0) continue;
    last = i;
    target -= mass[i]!;
    if (target < 0) return i;
  }
  return last;
}

/**
 * Lloyd's iterations until no centroid moves by convergenceDeltaE or more (or
 * maxIterations); empty clusters are dropped. The assignment returned is the
 * one the final centroids were computed from.
 */
function lloyd(points: LabPoints, initial: readonly number[], options: KMeansOptions): Clustering {
  const { l, a, b, weight, count } = points;
  let centres = initial.slice();
  let weights: number[] = [];
  const assignment = new Int32Array(count);
  const limit = options.convergenceDeltaE ** 2;
  for (let iteration = 0; iteration < options.maxIterations; iteration++) {
    const k = centres.length / 3;
    for (let i = 0; i < count; i++) assignment[i] = nearestCentre(centres, l[i]!, a[i]!, b[i]!, k);
    const sums = new Float64Array(k * 4);
    for (let i = 0; i < count; i++) {
      const c = assignment[i]! * 4;
      const w = weight[i]!;
      sums[c] = sums[c]! + w;
      sums[c + 1] = sums[c + 1]! + w * l[i]!;
      sums[c + 2] = sums[c + 2]! + w * a[i]!;
      sums[c + 3] = sums[c + 3]! + w * b[i]!;
    }
    const next: number[] = [];
    weights = [];
    const renumber = new Int32Array(k).fill(-1);
    let moved = 0;
    for (let c = 0; c < k; c++) {
      const w = sums[c * 4]!;
      if (!(w > 0)) continue;
      renumber[c] = weights.length;
      weights.push(w);
      const [cl, ca, cb] = [sums[c * 4 + 1]! / w, sums[c * 4 + 2]! / w, sums[c * 4 + 3]! / w];
      moved = Math.max(moved, (cl - centres[c * 3]!) ** 2 + (ca - centres[c * 3 + 1]!) ** 2 + (cb - centres[c * 3 + 2]!) ** 2);
      next.push(cl, ca, cb);
    }
    if (next.length !== centres.length) {
      for (let i = 0; i < count; i++) assignment[i] = renumber[assignment[i]!]!;
      moved = Infinity;
    }
    centres = next;
    if (moved < limit) break;
  }
  return { centres, weights, assignment };
}

export function nearestCentre(centres: readonly number[], l: number, a: number, b: number, k = centres.length / 3): number {
  let best = 0;
  let bestDistance = Infinity;
  for (let c = 0; c < k; c++) {
    const d = (l - centres[c * 3]!) ** 2 + (a - centres[c * 3 + 1]!) ** 2 + (b - centres[c * 3 + 2]!) ** 2;
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

/** The centroids, the closest two merged into their weighted mean until no two are closer than mergeDeltaE. */
function mergeClose({ centres, weights }: Clustering, mergeDeltaE: number): number[] {
  const merged = centres.slice();
  const mass = weights.slice();
  for (;;) {
    const k = merged.length / 3;
    let [bestI, bestJ, bestDistance] = [-1, -1, Infinity];
    for (let i = 0; i < k; i++) {
      for (let j = i + 1; j < k; j++) {
        const distance = Math.hypot(
          merged[i * 3]! - merged[j * 3]!,
          merged[i * 3 + 1]! - merged[j * 3 + 1]!,
          merged[i * 3 + 2]! - merged[j * 3 + 2]!,
        );
        if (distance < bestDistance) [bestI, bestJ, bestDistance] = [i, j, distance];
      }
    }
    if (!(bestDistance < mergeDeltaE)) return merged;
    const [wi, wj] = [mass[bestI]!, mass[bestJ]!];
    for (let axis = 0; axis < 3; axis++) {
      merged[bestI * 3 + axis] = (merged[bestI * 3 + axis]! * wi + merged[bestJ * 3 + axis]! * wj) / (wi + wj);
    }
    mass[bestI] = wi + wj;
    merged.splice(bestJ * 3, 3);
    mass.splice(bestJ, 1);
  }
}
