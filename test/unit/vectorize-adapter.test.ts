import { describe, expect, it } from 'vitest';
import { shardedIndex } from '../../src/ports/vector-index/sharded';
import { vectorizeIndex } from '../../src/ports/vector-index/vectorize';
import { FakeVectorize } from '../fakes/vectorize';

const fastClock = { sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.min(ms, 50))) };
const unit = (...values: number[]): number[] => {
  const norm = Math.hypot(...values);
  return values.map((value) => value / norm);
};

describe('Vectorize adapter, against an in-test fake with Vectorize limits', () => {
  it('returns from upsert and delete only once the writes are visible', async () => {
    const fake = new FakeVectorize({ dimensions: 2, delayMs: 300 });
    await fake.upsert([{ id: 'raw', values: unit(1, 0) }]);
    expect(await fake.getByIds(['raw'])).toEqual([]); // the fake delays like Vectorize

    const index = vectorizeIndex(fake, fastClock);
    await index.upsert([{ id: 'a', values: unit(1, 0), namespace: 'n', metadata: { type: 'Bag' } }]);
    expect(await fake.getByIds(['a'])).toHaveLength(1);
    expect(await index.getByIds(['a'])).toEqual([{ id: 'a', values: unit(1, 0), namespace: 'n', metadata: { type: 'Bag' } }]);
    await index.deleteByIds(['a']);
    expect(await fake.getByIds(['a'])).toEqual([]);
  });

  it('maps queries and keeps to the caps', async () => {
    const fake = new FakeVectorize({ dimensions: 2, delayMs: 0, metadataIndexes: ['type'] });
    const index = vectorizeIndex(fake, fastClock);
    await index.upsert([
      { id: 'a', values: unit(1, 0), namespace: 'n', metadata: { type: 'Bag', note: 'x' } },
      { id: 'b', values: unit(1, 1), namespace: 'n', metadata: { type: 'Seating' } },
    ]);
    expect((await index.query(unit(1, 0.1), { topK: 5, namespace: 'n' })).map((match) => match.id)).toEqual(['a', 'b']);
    expect((await index.query(unit(1, 0.1), { topK: 5, namespace: 'n', filter: { type: 'Seating' } })).map((match) => match.id)).toEqual(['b']);
    // A field without a metadata index filters nothing in: Vectorize only filters on indexed fields.
    expect(await index.query(unit(1, 0), { topK: 5, namespace: 'n', filter: { note: 'x' } })).toEqual([]);
    await expect(index.query(unit(1, 0), { topK: 101, namespace: 'n' })).rejects.toThrow(/topK/);
    await expect(index.query(unit(1, 0), { topK: 21, namespace: 'n', returnValues: true })).rejects.toThrow(/topK/);
    await expect(index.query(unit(1, 0), { topK: 5, filter: { type: 'x'.repeat(2100) } })).rejects.toThrow(/2048/);
  });

  it('reads and deletes many ids in batches within the getByIds cap', async () => {
    const fake = new FakeVectorize({ dimensions: 2, delayMs: 0 });
    const index = vectorizeIndex(fake, fastClock);
    const records = Array.from({ length: 45 }, (_, i) => ({ id: `v${i}`, values: unit(1, i + 1), namespace: 'n' }));
    await index.upsert(records);
    expect(await index.getByIds(records.map((record) => record.id))).toHaveLength(45);
    await index.deleteByIds(records.map((record) => record.id));
    expect(await index.getByIds(records.map((record) => record.id))).toEqual([]);
  });

  it('reaches 1000-deep exact results through the shards', async () => {
    const fake = new FakeVectorize({ dimensions: 8, delayMs: 0 });
    const index = shardedIndex(new Map([['fake', vectorizeIndex(fake, fastClock)]]), 16);
    let seed = 7;
    const next = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5;
    const vectors = Array.from({ length: 2000 }, (_, i) => ({ id: `v${i}`, values: unit(...Array.from({ length: 8 }, next)), namespace: 'app' }));
    for (let start = 0; start < vectors.length; start += 1000) await index.upsert(vectors.slice(start, start + 1000));
    const probe = unit(...Array.from({ length: 8 }, next));
    const exact = vectors
      .map((vector) => ({ id: vector.id, score: vector.values.reduce((sum, value, i) => sum + value * probe[i]!, 0) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 1000)
      .map((match) => match.id);
    const merged = (await index.query(probe, { topK: 1000, namespace: 'app' })).map((match) => match.id);
    expect(merged).toEqual(exact);
  });
});
