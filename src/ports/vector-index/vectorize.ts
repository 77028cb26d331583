import { VECTORIZE_LIMITS } from '../../vectorize-limits';
import type { MetadataValue, VectorIndex, VectorMatch, VectorMetadata, VectorRecord } from './types';

/** The part of the Vectorize binding the adapter uses (workers-types' `Vectorize`). */
export type VectorizeBinding = Pick<Vectorize, 'query' | 'upsert' | 'getByIds' | 'deleteByIds' | 'describe'>;

/** How long a write may take to become visible before the adapter gives up waiting, and how often it looks. */
const VISIBILITY = { timeoutMs: 30_000, pollMs: 500 } as const;

const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

const toMetadata = (metadata: Record<string, VectorizeVectorMetadata> | undefined): VectorMetadata | undefined =>
  metadata ? (Object.fromEntries(Object.entries(metadata).filter(([, value]) => ['string', 'number', 'boolean'].includes(typeof value))) as Record<string, MetadataValue>) : undefined;

const toRecord = (vector: VectorizeVector): VectorRecord => {
  const metadata = toMetadata(vector.metadata);
  return {
    id: vector.id,
    values: [...vector.values],
    ...(vector.namespace === undefined ? {} : { namespace: vector.namespace }),
    ...(metadata ? { metadata } : {}),
  };
};

/**
 * Cloudflare Vectorize behind the port. Vectorize applies writes after a few seconds, so `upsert` and `deleteByIds`
 * return only once `getByIds` shows them: an insert reaches 100 % only when its vectors are queryable.
 */
export function vectorizeIndex(binding: VectorizeBinding, clock: { sleep(ms: number): Promise<void> } = { sleep: (ms) => scheduler.wait(ms) }): VectorIndex {
  async function waitUntil(ids: string[], visible: boolean): Promise<void> {
    const deadline = Date.now() + VISIBILITY.timeoutMs;
    for (;;) {
      const found = new Set((await Promise.all(chunks(ids, VECTORIZE_LIMITS.maxTopKWithValuesOrMetadata).map((batch) => binding.getByIds(batch)))).flat().map((vector) => vector.id));
      if (ids.every((id) => found.has(id) === visible)) return;
      if (Date.now() > deadline) throw new Error(`Vectorize did not apply the write within ${VISIBILITY.timeoutMs} ms`);
      await clock.sleep(VISIBILITY.pollMs);
    }
  }

  return {
    maxTopK: VECTORIZE_LIMITS.maxTopK,
    async upsert(records) {
      for (const batch of chunks(records, VECTORIZE_LIMITS.maxUpsertBatch)) await binding.upsert(batch);
      await waitUntil(records.map((record) => record.id), true);
    },
    async query(vector, query): Promise<VectorMatch[]> {
      const { matches } = await binding.query(vector, {
        topK: query.topK,
        ...(query.namespace === undefined ? {} : { namespace: query.namespace }),
        ...(query.filter ? { filter: query.filter as VectorizeVectorMetadataFilter } : {}),
        returnValues: query.returnValues ?? false,
        returnMetadata: query.returnMetadata ? 'all' : 'none',
      });
      return matches.map((match) => {
        const metadata = toMetadata(match.metadata);
        return { id: match.id, score: match.score, ...(match.values ? { values: [...match.values] } : {}), ...(metadata ? { metadata } : {}) };
      });
    },
    async getByIds(ids) {
      const batches = await Promise.all(chunks(ids, VECTORIZE_LIMITS.maxTopKWithValuesOrMetadata).map((batch) => binding.getByIds(batch)));
      return batches.flat().map(toRecord);
    },
    async deleteByIds(ids) {
      if (ids.length === 0) return;
      for (const batch of chunks(ids, VECTORIZE_LIMITS.maxUpsertBatch)) await binding.deleteByIds(batch);
      await waitUntil(ids, false);
    },
    countVectors: async () => (await binding.describe()).vectorCount,
  };
}
