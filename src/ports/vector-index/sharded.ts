import type { VectorIndex, VectorMatch, VectorRecord } from './types';

/**
 * Which index of a group holds each of an application's shards (storage/placement.ts), by the application's
 * namespace: one name a shard, or `null` for an application placed before placement existed, all of whose shards are
 * in the group's first index.
 */
export type ShardPlacement = (namespace: string) => Promise<readonly string[] | null>;

/** The shard a vector id belongs to: a hash of the id, so that every index agrees on it. */
export function shardOf(id: string, shards: number): number {
  let hash = 2166136261;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 16777619);
  return (hash >>> 0) % shards;
}

/**
 * Depth past Vectorize's topK cap of 100: each namespace is spread over `shards` sub-namespaces by a hash of the
 * vector id, a query asks every shard for its top k and merges them. The merge is the exact top k whenever no shard
 * holds more than 100 of it; with 16 shards and k = 1000 a shard holds 62.5 on average (σ ≈ 7.7), so more than 100
 * is a 4.9σ event (about 10⁻⁶ a shard). `test/unit/sharded-index.test.ts` measures the recall.
 *
 * The shards of one application may live in different indexes of the group (`indexes`, the first the default), as
 * `placementOf` says: a search merges them as it merges shards of one index. Reads and deletes by id, which name no
 * application, ask every index of the group.
 */
export function shardedIndex(indexes: ReadonlyMap<string, VectorIndex>, shards: number, placementOf: ShardPlacement = async () => null): VectorIndex {
  const all = [...indexes.values()];
  const first = all[0];
  if (!first) throw new Error('An index group needs at least one index');
  const sub = (namespace: string | undefined, shard: number): string => `${namespace ?? ''}#${shard}`;
  const parent = (namespace: string | undefined): string | undefined => namespace?.replace(/#\d+$/, '') || undefined;
  const indexOf = (placement: readonly string[] | null, shard: number): VectorIndex => {
    if (!placement) return first;
    const index = indexes.get(placement[shard]!);
    if (!index) throw new Error(`Shard ${shard} is placed on ${placement[shard]}, which its index group does not list`);
    return index;
  };

  return {
    maxTopK: first.maxTopK * shards,
    async upsert(records: VectorRecord[]) {
      const byIndex = new Map<VectorIndex, VectorRecord[]>();
      const placements = new Map<string, readonly string[] | null>();
      for (const namespace of new Set(records.map((record) => record.namespace ?? ''))) placements.set(namespace, await placementOf(namespace));
      for (const record of records) {
        const shard = shardOf(record.id, shards);
        const index = indexOf(placements.get(record.namespace ?? '')!, shard);
        const held = byIndex.get(index) ?? [];
        held.push({ ...record, namespace: sub(record.namespace, shard) });
        byIndex.set(index, held);
      }
      await Promise.all([...byIndex].map(([index, held]) => index.upsert(held)));
    },
    async query(vector, query): Promise<VectorMatch[]> {
      const perShard = Math.min(query.topK, first.maxTopK);
      const placement = await placementOf(query.namespace ?? '');
      const results = await Promise.all(
        Array.from({ length: shards }, (_, shard) => indexOf(placement, shard).query(vector, { ...query, topK: perShard, namespace: sub(query.namespace, shard) })),
      );
      return results
        .flat()
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
        .slice(0, query.topK);
    },
    async getByIds(ids) {
      const records = (await Promise.all(all.map((index) => index.getByIds(ids)))).flat();
      return records.map((record) => ({ ...record, namespace: parent(record.namespace) }));
    },
    deleteByIds: async (ids) => {
      await Promise.all(all.map((index) => index.deleteByIds(ids)));
    },
    countVectors: async () => (await Promise.all(all.map((index) => index.countVectors()))).reduce((sum, count) => sum + count, 0),
  };
}
