/**
 * The cron sweeper's housekeeping (issue 45, "Housekeeping that scales"): records of stale vector metadata are taken
 * oldest first, and one whose rewrite keeps failing waits longer each time, so it never holds the others back.
 */
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { sweepStalledInserts } from '../../src/ingest/sweeper';
import { formatTimestamp } from '../../src/time';
import { createApp, fixtureUrl, insertAndWait, withVectorIndex } from './helpers';

const minutes = (from: Date, count: number) => new Date(from.getTime() + count * 60_000);

describe('stale vector records', () => {
  it('are rewritten oldest first; one that keeps failing backs off, doubling, and the others go on', async () => {
    const app = await createApp('housekeeping', [{ name: 'brand', type: 'string', searchable: true }]);
    const files = ['animals_birds_hen.png', 'food_fruit_kiwi.png', 'animals_birds_magpie.png'];
    expect((await insertAndWait(app, files.map((file) => ({ im_name: file, im_url: fixtureUrl(`/images/${file}`), brand: 'acme' })))).fail_count).toBe(0);
    const ids = (await env.DB.prepare('SELECT id FROM images WHERE app_id = ? ORDER BY id').bind(app.app_id).all<{ id: number }>()).results.map(({ id }) => id);
    const [failing, second, third] = ids as [number, number, number];
    const now = new Date();
    // Records as updates given up after their merge leave them (no pending item), the failing one the oldest.
    const record = (attempt: string, imageId: number, recordedAt: Date) =>
      env.DB.prepare('INSERT INTO stale_vector_metadata (attempt, trans_id, item_index, image_id, app_id, recorded_at) VALUES (?, -1, 0, ?, ?, ?)')
        .bind(attempt, imageId, app.app_id, formatTimestamp(recordedAt))
        .run();
    await record('failing', failing, minutes(now, -30));
    await record('second', second, minutes(now, -20));
    const rewrites: number[] = [];
    const failingIndex = withVectorIndex((stub) => ({
      upsert: async (...args: Parameters<typeof stub.upsert>) => {
        const [records] = args as unknown as [{ id: string }[]];
        const imageId = Number.parseInt(records[0]!.id, 10);
        if (!rewrites.includes(imageId)) rewrites.push(imageId);
        if (imageId === failing) throw new Error('injected: vector upsert');
        return stub.upsert(...args);
      },
    }));
    const left = async () =>
      (await env.DB.prepare('SELECT attempt, failures, retry_at FROM stale_vector_metadata WHERE app_id = ? ORDER BY attempt').bind(app.app_id).all<{ attempt: string; failures: number; retry_at: string }>()).results;

    await sweepStalledInserts(failingIndex, now);
    // The oldest first; it failed and waits 10 minutes; the next was rewritten all the same.
    expect(rewrites).toEqual([failing, second]);
    expect(await left()).toEqual([{ attempt: 'failing', failures: 1, retry_at: formatTimestamp(minutes(now, 10)) }]);

    // Before its wait is over it is not tried; a newer record is.
    await record('third', third, minutes(now, 1));
    rewrites.length = 0;
    await sweepStalledInserts(failingIndex, minutes(now, 5));
    expect(rewrites).toEqual([third]);

    // After it, tried again, and the wait doubles.
    rewrites.length = 0;
    await sweepStalledInserts(failingIndex, minutes(now, 11));
    expect(rewrites).toEqual([failing]);
    expect(await left()).toEqual([{ attempt: 'failing', failures: 2, retry_at: formatTimestamp(minutes(now, 31)) }]);

    // Once the rewrite works, the record goes.
    await sweepStalledInserts(env, minutes(now, 31));
    expect(await left()).toEqual([]);
  });
});
