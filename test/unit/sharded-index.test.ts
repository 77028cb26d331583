import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { localVectorIndex } from '../../src/ports/vector-index/local';
import { shardedIndex, shardOf } from '../../src/ports/vector-index/sharded';

/** A seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const DIMENSIONS = 32;
const COUNT = 4000;
const SHARDS = 16;

describe('sharded index: 1000-deep results under a topK cap of 100', () => {
  it('merges the exact top 1000 of several thousand vectors', async () => {
    const next = random(42);
    const unit = (): number[] => {
      const values = Array.from({ length: DIMENSIONS }, () => next() - 0.5);
      const norm = Math.hypot(...values);
      return values.map((value) => value / norm);
    };
    const vectors = Array.from({ length: COUNT }, (_, i) => ({ id: `v${i}`, values: unit() }));
    const index = shardedIndex(new Map([['one', localVectorIndex(env.LOCAL_VECTOR_INDEX, `sharded-${Date.now()}`)]]), SHARDS);
    expect(index.maxTopK).toBe(1600);
    for (let start = 0; start < COUNT; start += 1000) {
      await index.upsert(vectors.slice(start, start + 1000).map((vector) => ({ ...vector, namespace: 'app' })));
    }
    await index.upsert([{ id: 'elsewhere', values: unit(), namespace: 'other-app' }]);

    let recalled = 0;
    const queries = 5;
    for (let q = 0; q < queries; q++) {
      const probe = unit();
      const exact = vectors
        .map((vector) => ({ id: vector.id, score: vector.values.reduce((sum, value, i) => sum + value * probe[i]!, 0) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 1000)
        .map((match) => match.id);
      const merged = await index.query(probe, { topK: 1000, namespace: 'app' });
      expect(merged).toHaveLength(1000);
      expect(merged.map((match) => match.score)).toEqual([...merged.map((match) => match.score)].sort((a, b) => b - a));
      const found = new Set(merged.map((match) => match.id));
      recalled += exact.filter((id) => found.has(id)).length;
    }
    // Recall of the true top 1000, measured: the README quotes it.
    expect(recalled / (queries * 1000)).toBe(1);
  });

  it('reads back records under their own namespace and deletes across shards', async () => {
    const index = shardedIndex(new Map([['one', localVectorIndex(env.LOCAL_VECTOR_INDEX, `sharded-ids-${Date.now()}`)]]), SHARDS);
    await index.upsert(['a', 'b', 'c'].map((id, i) => ({ id, values: [1, i], namespace: 'app' })));
    expect((await index.getByIds(['a', 'b', 'c'])).map((record) => record.namespace)).toEqual(['app', 'app', 'app']);
    await index.deleteByIds(['a', 'c']);
    expect((await index.query([1, 0], { topK: 10, namespace: 'app' })).map((match) => match.id)).toEqual(['b']);
  });

  it("answers exactly as one index does with an application's shards placed over two, each holding only its own", async () => {
    const stamp = Date.now();
    const [a, b, single] = ['a', 'b', 'single'].map((name) => localVectorIndex(env.LOCAL_VECTOR_INDEX, `placed-${name}-${stamp}`));
    const placement = Array.from({ length: SHARDS }, (_, shard) => (shard % 3 === 0 ? 'b' : 'a'));
    const placed = shardedIndex(new Map([['a', a!], ['b', b!]]), SHARDS, async (namespace) => (namespace === 'app' ? placement : null));
    const one = shardedIndex(new Map([['single', single!]]), SHARDS);
    const next = random(7);
    const vectors = Array.from({ length: 600 }, (_, i) => ({ id: `${i}`, values: Array.from({ length: DIMENSIONS }, () => next() - 0.5), namespace: 'app', metadata: { even: i % 2 === 0 } }));
    await Promise.all([placed.upsert(vectors), one.upsert(vectors)]);
    // An application made before placement (null) is all in the group's first index.
    await placed.upsert([{ id: 'legacy', values: vectors[0]!.values, namespace: 'old-app' }]);

    expect((await a!.countVectors()) + (await b!.countVectors())).toBe(601);
    expect(await b!.getByIds(vectors.filter((vector) => placement[shardOf(vector.id, SHARDS)] === 'a').map((vector) => vector.id))).toEqual([]);
    expect(await a!.getByIds(['legacy'])).toHaveLength(1);
    for (const filter of [undefined, { even: true }]) {
      const probe = Array.from({ length: DIMENSIONS }, () => next() - 0.5);
      const query = { topK: 500, namespace: 'app', ...(filter ? { filter } : {}) };
      expect(await placed.query(probe, query)).toEqual(await one.query(probe, query));
    }
    const read = await placed.getByIds(['1', '2', 'legacy']);
    expect(Object.fromEntries(read.map((record) => [record.id, record.namespace]))).toEqual({ 1: 'app', 2: 'app', legacy: 'old-app' });
    await placed.deleteByIds(vectors.map((vector) => vector.id));
    expect(await placed.countVectors()).toBe(1);
  });
});
