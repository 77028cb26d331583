import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { VectorIndex } from '../../src/ports/vector-index/types';
import { primaryDatabase, RoundTripMeter, roundTripMeterOf, type RoundTripKind } from '../../src/storage/d1-meter';

const countOf = (meter: RoundTripMeter, kind: RoundTripKind): number => meter.tallies().find((tally) => tally.kind === kind)!.count;
const counts = (meter: RoundTripMeter) => Object.fromEntries(meter.tallies().map(({ kind, count }) => [kind, count]));

describe('the round-trip meter (storage/d1-meter.ts)', () => {
  beforeAll(async () => {
    await env.DB.exec('CREATE TABLE IF NOT EXISTS meter_probe (n INTEGER)');
  });

  it('counts every execution and every batch as one round trip to the primary when reads are not near', async () => {
    const meter = new RoundTripMeter(env);
    const db = meter.envReading('primary').DB;
    await db.prepare('SELECT 1 AS one').first();
    await db.prepare('SELECT ?1 AS one').bind(1).all();
    await db.prepare('SELECT 1').raw();
    await db.batch([db.prepare('SELECT 1'), db.prepare('SELECT 2')]);
    expect(counts(meter)).toEqual({ 'd1-primary': 4, 'd1-replica': 0, 'vector-index': 0 });
  });

  it('near, counts a round trip that only reads as the replica, one that writes (or exec) as the primary', async () => {
    const meter = new RoundTripMeter(env);
    const db = meter.envReading('near').DB;
    expect(await db.prepare("SELECT 'delete' AS word, replace('ab', 'b', 'c') AS replaced").first()).toEqual({ word: 'delete', replaced: 'ac' });
    await db.prepare('WITH x AS (SELECT 1 AS n) SELECT n FROM x').all();
    await db.batch([db.prepare('SELECT 1'), db.prepare('SELECT 2')]);
    expect(counts(meter)).toMatchObject({ 'd1-primary': 0, 'd1-replica': 3 });

    await db.prepare('INSERT INTO meter_probe (n) VALUES (?)').bind(7).run();
    await db.batch([db.prepare('SELECT 1'), db.prepare('UPDATE meter_probe SET n = 8 WHERE n = 7')]);
    await db.exec('SELECT 1');
    expect(counts(meter)).toMatchObject({ 'd1-primary': 3, 'd1-replica': 3 });
    // The session reads its own writes.
    expect(await db.prepare('SELECT count(*) AS n FROM meter_probe WHERE n = 8').first('n')).toBeGreaterThan(0);
  });

  it('counts each call of the vector index, and its env copies (spread too) carry it', async () => {
    const meter = new RoundTripMeter(env);
    const copy = meter.envReading('near');
    expect(roundTripMeterOf({ ...copy })).toBe(meter);
    expect(roundTripMeterOf(env)).toBeUndefined();
    // Its primary, counted there even where it reads near; an env outside a request is its own.
    await primaryDatabase(copy).prepare('SELECT 1').first();
    expect(counts(meter)).toMatchObject({ 'd1-primary': 1, 'd1-replica': 0 });
    expect(primaryDatabase(env)).toBe(env.DB);
    const index: VectorIndex = { maxTopK: 100, upsert: async () => {}, query: async () => [], getByIds: async () => [], deleteByIds: async () => {}, countVectors: async () => 0 };
    const metered = meter.vectorIndex(index);
    expect(metered.maxTopK).toBe(100);
    await Promise.all([metered.query([1], { topK: 1 }), metered.getByIds(['1'])]);
    expect(countOf(meter, 'vector-index')).toBe(2);
  });

  it('waits the simulated distance before each round trip, and times it', async () => {
    const meter = new RoundTripMeter({ ...env, D1_SIMULATED_PRIMARY_MS: '30', D1_SIMULATED_REPLICA_MS: '20' });
    await meter.envReading('primary').DB.prepare('SELECT 1').first();
    await meter.envReading('near').DB.prepare('SELECT 1').first();
    const [primary, replica] = meter.tallies();
    expect(primary!.ms).toBeGreaterThanOrEqual(30);
    expect(replica!.ms).toBeGreaterThanOrEqual(20);
  });
});
