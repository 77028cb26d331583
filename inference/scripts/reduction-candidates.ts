/**
 * The reductions measure-embedding.ts compares besides the one the service
 * uses. None is fitted to images: projections come from a seeded generator, so
 * a seed always gives the same matrix.
 */
import { seededRandom } from '../src/random.ts';
import type { Float32Tensor } from '../src/runtime/runtime.ts';

/** A linear map stored row-major: outputDim rows of inputDim columns. */
export type Projection = {
  readonly inputDim: number;
  readonly outputDim: number;
  readonly rows: Float64Array;
};


/** Johnson-Lindenstrauss projection with i.i.d. standard normal entries. */
export function gaussianProjection(inputDim: number, outputDim: number, seed: number): Projection {
  const uniform = seededRandom(seed);
  const rows = new Float64Array(outputDim * inputDim);
  // Box-Muller
  for (let i = 0; i < rows.length; i++) rows[i] = Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  return { inputDim, outputDim, rows };
}

/** Gaussian rows made orthonormal (modified Gram-Schmidt): a uniformly random subspace. */
export function orthogonalProjection(inputDim: number, outputDim: number, seed: number): Projection {
  if (outputDim > inputDim) throw new RangeError('cannot have more orthonormal rows than columns');
  const projection = gaussianProjection(inputDim, outputDim, seed);
  const row = (index: number) => projection.rows.subarray(index * inputDim, (index + 1) * inputDim);
  for (let r = 0; r < outputDim; r++) {
    const current = row(r);
    for (let previous = 0; previous < r; previous++) {
      const basis = row(previous);
      const overlap = dot(current, basis);
      for (let i = 0; i < inputDim; i++) current[i]! -= overlap * basis[i]!;
    }
    const norm = Math.sqrt(dot(current, current));
    for (let i = 0; i < inputDim; i++) current[i]! /= norm;
  }
  return projection;
}

export function project({ inputDim, outputDim, rows }: Projection, vector: ArrayLike<number>): Float64Array {
  const result = new Float64Array(outputDim);
  for (let r = 0; r < outputDim; r++) {
    let sum = 0;
    for (let i = 0; i < inputDim; i++) sum += rows[r * inputDim + i]! * vector[i]!;
    result[r] = sum;
  }
  return result;
}

/** sign(x)·|x|^power per component; power < 1 damps the few dominant channels. */
export function signedPower(vector: ArrayLike<number>, power: number): Float64Array {
  return Float64Array.from(vector, (x) => Math.sign(x) * Math.abs(x) ** power);
}

/** Removes the all-ones direction, the part every non-negative feature shares. */
export function minusMean(vector: ArrayLike<number>): Float64Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]!;
  return Float64Array.from(vector, (x) => x - sum / vector.length);
}

/** GeM: per-channel (mean of x^p)^(1/p) over an NHWC map of non-negative values. */
export function generalizedMeanPool(map: Float32Tensor, p: number): Float64Array {
  const channels = map.shape[map.shape.length - 1]!;
  const positions = map.data.length / channels;
  const pooled = new Float64Array(channels);
  for (let i = 0; i < map.data.length; i++) pooled[i % channels]! += map.data[i]! ** p;
  return pooled.map((sum) => (sum / positions) ** (1 / p));
}

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
