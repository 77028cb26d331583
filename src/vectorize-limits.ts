/**
 * Vectorize's documented limits (developers.cloudflare.com/vectorize/platform/limits/): a leaf, so that the filter
 * language keeps its pushed-down filters within them without importing the vector index port, whose adapters enforce
 * them (ports/vector-index/limits.ts) so that code that works locally does not break on Cloudflare.
 */
export const VECTORIZE_LIMITS = {
  maxDimensions: 1536,
  maxTopK: 100,
  /** topK when values or metadata are returned. */
  maxTopKWithValuesOrMetadata: 20,
  maxIdBytes: 64,
  maxNamespaceBytes: 64,
  maxMetadataBytes: 10 * 1024,
  maxUpsertBatch: 1000,
  maxFilterBytes: 2048,
  /** What one index holds (docs/scale.md). */
  maxVectorsPerIndex: 10_000_000,
  maxNamespacesPerIndex: 50_000,
} as const;
