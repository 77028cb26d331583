import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { localVectorIndex } from '../../src/ports/vector-index/local';
import { shardedIndex } from '../../src/ports/vector-index/sharded';

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
    const index = shardedIndex(localVectorIndex(env.LOCAL_VECTOR_INDEX, `sharded-${Date.now()}`), SHARDS);
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
    const index = shardedIndex(localVectorIndex(env.LOCAL_VECTOR_INDEX, `sharded-ids-${Date.now()}`), SHARDS);
    await index.upsert(['a', 'b', 'c'].map((id, i) => ({ id, values: [1, i], namespace: 'app' })));
    expect((await index.getByIds(['a', 'b', 'c'])).map((record) => record.namespace)).toEqual(['app', 'app', 'app']);
    await index.deleteByIds(['a', 'c']);
    expect((await index.query([1, 0], { topK: 10, namespace: 'app' })).map((match) => match.id)).toEqual(['b']);
  });
});
