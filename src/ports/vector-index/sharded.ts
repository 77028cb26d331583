import type { VectorIndex, VectorMatch, VectorRecord } from './types';

/**
 * Depth past Vectorize's topK cap of 100: each namespace is spread over `shards` sub-namespaces by a hash of the
 * vector id, a query asks every shard for its top k and merges them. The merge is the exact top k whenever no shard
 * holds more than 100 of it; with 16 shards and k = 1000 a shard holds 62.5 on average (σ ≈ 7.7), so more than 100
 * is a 4.9σ event (about 10⁻⁶ a shard). `test/unit/sharded-index.test.ts` measures the recall.
 */
export function shardedIndex(base: VectorIndex, shards: number): VectorIndex {
  const shardOf = (id: string): number => {
    let hash = 2166136261;
    for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 16777619);
    return (hash >>> 0) % shards;
  };
  const sub = (namespace: string | undefined, shard: number): string => `${namespace ?? ''}#${shard}`;
  const parent = (namespace: string | undefined): string | undefined => namespace?.replace(/#\d+$/, '') || undefined;

  return {
    maxTopK: base.maxTopK * shards,
    upsert: (records: VectorRecord[]) => base.upsert(records.map((record) => ({ ...record, namespace: sub(record.namespace, shardOf(record.id)) }))),
    async query(vector, query): Promise<VectorMatch[]> {
      const perShard = Math.min(query.topK, base.maxTopK);
      const results = await Promise.all(
        Array.from({ length: shards }, (_, shard) => base.query(vector, { ...query, topK: perShard, namespace: sub(query.namespace, shard) })),
      );
      return results
        .flat()
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
        .slice(0, query.topK);
    },
    async getByIds(ids) {
      const records = await base.getByIds(ids);
      return records.map((record) => ({ ...record, namespace: parent(record.namespace) }));
    },
    deleteByIds: (ids) => base.deleteByIds(ids),
  };
}
