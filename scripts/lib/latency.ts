/** Request timings as the bench and load commands report them. No imports: the Worker's bench (test/bench) reads it too. */
export type Latency = { requests: number; p50: number; p95: number; mean: number };

/** The q-quantile of sorted samples, by the nearest rank below. */
export const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export function latencyOf(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, ms) => sum + ms, 0) / Math.max(1, sorted.length);
  return { requests: sorted.length, p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), mean };
}
