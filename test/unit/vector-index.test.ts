import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { localVectorIndex } from '../../src/ports/vector-index/local';

let counter = 0;
const freshIndex = () => localVectorIndex(env.LOCAL_VECTOR_INDEX, `test-${Date.now()}-${counter++}`);
const unit = (...values: number[]): number[] => {
  const norm = Math.hypot(...values);
  return values.map((value) => value / norm);
};

describe('local vector index (the Vectorize stand-in of the port)', () => {
  it('ranks by exact cosine similarity within a namespace', async () => {
    const index = freshIndex();
    await index.upsert([
      { id: 'a', values: unit(1, 0, 0), namespace: 'app1' },
      { id: 'b', values: unit(1, 1, 0), namespace: 'app1' },
      { id: 'c', values: unit(0, 1, 0), namespace: 'app1' },
      { id: 'd', values: unit(1, 0, 0), namespace: 'app2' },
    ]);
    const matches = await index.query(unit(1, 0.1, 0), { topK: 10, namespace: 'app1' });
    expect(matches.map((match) => match.id)).toEqual(['a', 'b', 'c']);
    expect(matches[0]?.score).toBeCloseTo(0.995, 3);
    expect(matches[2]?.score).toBeCloseTo(0.0995, 3);
    expect((await index.query(unit(1, 0, 0), { topK: 10, namespace: 'app2' })).map((match) => match.id)).toEqual(['d']);
  });

  it('replaces on upsert, reads back by id and deletes by id', async () => {
    const index = freshIndex();
    await index.upsert([{ id: 'a', values: unit(1, 0), namespace: 'n' }]);
    await index.upsert([{ id: 'a', values: unit(0, 1), namespace: 'n', metadata: { type: 'top' } }]);
    expect(await index.getByIds(['a', 'missing'])).toEqual([{ id: 'a', namespace: 'n', values: unit(0, 1), metadata: { type: 'top' } }]);
    await index.deleteByIds(['a']);
    expect(await index.getByIds(['a'])).toEqual([]);
    expect(await index.query(unit(0, 1), { topK: 5, namespace: 'n' })).toEqual([]);
  });

  it('keeps ids, vectors and metadata together when vectors leave and come back in the middle of a namespace', async () => {
    const index = freshIndex();
    const vector = (i: number): number[] => unit(1, i, i % 3);
    await index.upsert(Array.from({ length: 10 }, (_, i) => ({ id: `v${i}`, values: vector(i), namespace: 'n', metadata: { i } })));
    await index.deleteByIds(['v0', 'v4', 'v9']);
    await index.upsert([{ id: 'v4', values: vector(4), namespace: 'n', metadata: { i: 4 } }, { id: 'v5', values: vector(5), namespace: 'other' }]);
    const kept = [1, 2, 3, 4, 6, 7, 8];
    for (const i of kept) {
      const [match] = await index.query(vector(i), { topK: 1, namespace: 'n', returnMetadata: true });
      expect(match).toMatchObject({ id: `v${i}`, metadata: { i } });
      expect(match?.score).toBeCloseTo(1, 5);
    }
    expect((await index.query(vector(1), { topK: 20, namespace: 'n' })).map((match) => match.id).sort()).toEqual(kept.map((i) => `v${i}`));
    expect((await index.getByIds(['v0', 'v5', 'v8'])).map(({ id, namespace, metadata }) => ({ id, namespace, metadata }))).toEqual([
      { id: 'v5', namespace: 'other', metadata: undefined },
      { id: 'v8', namespace: 'n', metadata: { i: 8 } },
    ]);
  });

  it('filters on metadata with Vectorize operators, ANDed', async () => {
    const index = freshIndex();
    await index.upsert([
      { id: 'shoe-cheap', values: unit(1, 0), metadata: { type: 'shoe', price: 10 } },
      { id: 'shoe-dear', values: unit(1, 0.1), metadata: { type: 'shoe', price: 90 } },
      { id: 'bag', values: unit(1, 0.2), metadata: { type: 'bag', price: 20 } },
    ]);
    const ids = async (filter: Parameters<typeof index.query>[1]['filter']) =>
      (await index.query(unit(1, 0), { topK: 10, ...(filter ? { filter } : {}) })).map((match) => match.id);
    expect(await ids({ type: 'shoe' })).toEqual(['shoe-cheap', 'shoe-dear']);
    expect(await ids({ type: { $ne: 'shoe' } })).toEqual(['bag']);
    expect(await ids({ type: { $in: ['bag', 'hat'] } })).toEqual(['bag']);
    expect(await ids({ type: 'shoe', price: { $gte: 20, $lt: 100 } })).toEqual(['shoe-dear']);
  });

  it("enforces Vectorize's limits", async () => {
    const index = freshIndex();
    await index.upsert([{ id: 'a', values: unit(1, 0, 0) }]);
    await expect(index.query(unit(1, 0, 0), { topK: 101 })).rejects.toThrow(/topK/);
    await expect(index.query(unit(1, 0, 0), { topK: 21, returnValues: true })).rejects.toThrow(/topK/);
    await expect(index.query(unit(1, 0), { topK: 5 })).rejects.toThrow(/dimensions/);
    await expect(index.upsert([{ id: 'b', values: unit(1, 0) }])).rejects.toThrow(/dimensions/);
    await expect(index.upsert([{ id: 'x'.repeat(65), values: unit(1, 0, 0) }])).rejects.toThrow(/id/);
    await expect(index.upsert([{ id: 'c', values: unit(1, 0, 0), namespace: 'n'.repeat(65) }])).rejects.toThrow(/namespace/);
    await expect(index.query(unit(1, 0, 0), { topK: 1, filter: { a: { $regex: 'x' } as never } })).rejects.toThrow(/operator/);
    await expect(index.query(unit(1, 0, 0), { topK: 1, filter: { a: 'x'.repeat(2100) } })).rejects.toThrow(/2048/);
    await expect(freshIndex().upsert([{ id: 'big', values: new Array<number>(1537).fill(0.01) }])).rejects.toThrow(/1536/);
  });
});
