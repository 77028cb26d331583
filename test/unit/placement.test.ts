/**
 * The placement rules (src/placement/): an application's shards over a group's indexes, its catalog on a database.
 * `npm run simulate:placement` places a thousand shops by the same rules (docs/scale.md).
 */
import { describe, expect, it } from 'vitest';
import { D1_DATABASE_BYTES, placeDatabase } from '../../src/placement/databases';
import { placeShards, VECTORIZE_INDEX_CAPACITY, type IndexFill } from '../../src/placement/shards';

const empty = (name: string, fill: Partial<IndexFill> = {}): IndexFill => ({ name, vectors: 0, reserved: 0, namespaces: 0, ...fill });
const counts = (placed: string[] | null) => Object.fromEntries([...new Set(placed)].map((name) => [name, placed!.filter((other) => other === name).length]));

describe('placeShards', () => {
  it('spreads an application too large for one index over the indexes with room, alike', () => {
    const placed = placeShards([empty('a'), empty('b')], 16, 16_000_000, VECTORIZE_INDEX_CAPACITY);
    expect(counts(placed)).toEqual({ a: 8, b: 8 });
  });

  it('puts a new application on the index with the most free vectors, counting reservations not yet filled', () => {
    const indexes = [empty('a', { vectors: 5_000_000 }), empty('b', { vectors: 1_000_000, reserved: 6_000_000 }), empty('c', { vectors: 2_000_000 })];
    expect(counts(placeShards(indexes, 16, 1_600, VECTORIZE_INDEX_CAPACITY))).toEqual({ c: 16 });
    // An application expecting nothing counts a vector a shard: ties go to the first listed, then alternate.
    expect(placeShards([empty('a'), empty('b')], 4, 0, VECTORIZE_INDEX_CAPACITY)).toEqual(['a', 'b', 'a', 'b']);
  });

  it('gives no shard to an index whose vectors or namespaces it would pass', () => {
    const capacity = { vectors: 1_000, namespaces: 20 };
    // The first is the emptiest but has no namespace left; 60 vectors a shard would take the second past 1000.
    const indexes = [empty('no-namespace', { namespaces: 20 }), empty('nearly-full', { vectors: 950 }), empty('room', { vectors: 10 })];
    expect(counts(placeShards(indexes, 16, 960, capacity))).toEqual({ room: 16 });
  });

  it('refuses (null) when some shard fits nowhere, and leaves the fills it was given as they were', () => {
    const indexes = [empty('a', { vectors: 9_000_000 }), empty('b', { namespaces: 50_000 })];
    expect(placeShards(indexes, 16, 16_000_000, VECTORIZE_INDEX_CAPACITY)).toBeNull();
    expect(indexes).toEqual([empty('a', { vectors: 9_000_000 }), empty('b', { namespaces: 50_000 })]);
  });
});

describe('placeDatabase', () => {
  it('picks the database with the most free bytes that holds the application, the first on a tie', () => {
    const databases = [
      { name: 'DB', bytes: 4e9, applications: 10 },
      { name: 'DB_2', bytes: 1e9, applications: 3 },
      { name: 'DB_3', bytes: 1e9, applications: 0 },
    ];
    expect(placeDatabase(databases, 1e9)).toBe('DB_2');
    expect(placeDatabase([databases[1]!, { ...databases[0]!, bytes: 1e9 }], 1e9)).toBe('DB_2');
  });

  it('refuses (null) an application no database has room for, under the ceiling given', () => {
    expect(placeDatabase([{ name: 'DB', bytes: D1_DATABASE_BYTES - 1e9, applications: 1 }], 2e9)).toBeNull();
    expect(placeDatabase([{ name: 'DB', bytes: 7e9, applications: 1 }], 2e9, 0.8 * D1_DATABASE_BYTES)).toBeNull();
    expect(placeDatabase([{ name: 'DB', bytes: 7e9, applications: 1 }], 2e9)).toBe('DB');
  });
});
