import type { Float32Tensor } from '../../runtime/runtime.ts';

/** Per-channel mean over all positions of an NHWC feature map (batch of one). */
export function averagePool(map: Float32Tensor): Float64Array {
  const channels = map.shape[map.shape.length - 1]!;
  const positions = map.data.length / channels;
  const pooled = new Float64Array(channels);
  for (let i = 0; i < map.data.length; i++) pooled[i % channels]! += map.data[i]!;
  return pooled.map((sum) => sum / positions);
}

export function l2Normalize(vector: ArrayLike<number>): Float32Array {
  let squares = 0;
  for (let i = 0; i < vector.length; i++) squares += vector[i]! ** 2;
  const norm = Math.sqrt(squares);
  // A feature of all zeros has no direction; keep it zero rather than emit NaNs.
  return Float32Array.from(vector, (x) => (norm > 0 ? x / norm : 0));
}
