/**
 * The cron sweeper's housekeeping (issue 45, "Housekeeping that scales"): records of stale vector metadata are taken
 * oldest first, and one whose rewrite keeps failing waits longer each time, so it never holds the others back; retired
 * versions likewise, a failing one not failing the rest of its batch; finished insert transactions are kept for their
 * retention period, then deleted.
 */
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { sweepStalledInserts } from '../../src/ingest/sweeper';
import { formatTimestamp } from '../../src/time';
import { basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, waitForTransaction, withVectorIndex, catalogOf } from './helpers';

const minutes = (from: Date, count: number) => new Date(from.getTime() + count * 60_000);

describe('stale vector records', () => {
  it('are rewritten oldest first; one that keeps failing backs off, doubling, and the others go on', async () => {
    const app = await createApp('housekeeping', [{ name: 'brand', type: 'string', searchable: true }]);
    const db = await catalogOf(app);
    const files = ['animals_birds_hen.png', 'food_fruit_kiwi.png', 'animals_birds_magpie.png'];
    expect((await insertAndWait(app, files.map((file) => ({ im_name: file, im_url: fixtureUrl(`/images/${file}`), brand: 'acme' })))).fail_count).toBe(0);
    const ids = (await db.prepare('SELECT id FROM images WHERE app_id = ? ORDER BY id').bind(app.app_id).all<{ id: number }>()).results.map(({ id }) => id);
    const [failing, second, third] = ids as [number, number, number];
    const now = new Date();
    // Records as updates given up after their merge leave them (no pending item), the failing one the oldest.
    const record = (attempt: string, imageId: number, recordedAt: Date) =>
      db.prepare('INSERT INTO stale_vector_metadata (attempt, trans_id, item_index, image_id, app_id, recorded_at) VALUES (?, -1, 0, ?, ?, ?)')
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
      (await db.prepare('SELECT attempt, failures, retry_at FROM stale_vector_metadata WHERE app_id = ? ORDER BY attempt').bind(app.app_id).all<{ attempt: string; failures: number; retry_at: string }>()).results;

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

describe('retired versions', () => {
  it('are deleted oldest first; one whose deletion keeps failing backs off, doubling, and the rest of its batch goes', async () => {
    const app = await createApp('retired');
    const db = await catalogOf(app);
    const now = new Date();
    // Versions as a replace or remove leaves them, the failing one the oldest: its vectors cannot be deleted.
    const retire = async (imageId: number, retiredAt: Date) => {
      const blobKey = `${app.app_id}/retired-${imageId}`;
      await env.BLOBS.put(blobKey, new Uint8Array([1]));
      await db.prepare('INSERT INTO retired_versions (image_id, app_id, object_count, blob_key, retired_at) VALUES (?, ?, 0, ?, ?)')
        .bind(imageId, app.app_id, blobKey, formatTimestamp(retiredAt))
        .run();
    };
    const [failing, second, third, fourth] = [9_200_001, 9_200_002, 9_200_003, 9_200_004];
    await retire(failing, minutes(now, -30));
    await retire(second, minutes(now, -20));
    await retire(third, minutes(now, -10));
    let tries = 0;
    const failingIndex = withVectorIndex((stub) => ({
      deleteByIds: async (...args: Parameters<typeof stub.deleteByIds>) => {
        if (args[0].includes(String(failing))) {
          tries++;
          throw new Error('injected: vector delete');
        }
        return stub.deleteByIds(...args);
      },
    }));
    const left = async () =>
      (
        await db.prepare('SELECT image_id, failures, retry_at FROM retired_versions WHERE app_id = ? ORDER BY image_id')
          .bind(app.app_id)
          .all<{ image_id: number; failures: number; retry_at: string }>()
      ).results;
    const blobs = async () => (await env.BLOBS.list({ prefix: `${app.app_id}/retired-` })).objects.map(({ key }) => key);

    await sweepStalledInserts(failingIndex, now);
    // Its batch failed, was split, and the others went; it waits 10 minutes, its bytes kept.
    expect(tries).toBeGreaterThan(0);
    expect(await left()).toEqual([{ image_id: failing, failures: 1, retry_at: formatTimestamp(minutes(now, 10)) }]);
    expect(await blobs()).toEqual([`${app.app_id}/retired-${failing}`]);

    // Before its wait is over it is not tried; a newer version is deleted.
    await retire(fourth, minutes(now, 1));
    tries = 0;
    await sweepStalledInserts(failingIndex, minutes(now, 5));
    expect(tries).toBe(0);
    expect((await left()).map(({ image_id }) => image_id)).toEqual([failing]);

    // After it, tried again, and the wait doubles.
    await sweepStalledInserts(failingIndex, minutes(now, 11));
    expect(tries).toBeGreaterThan(0);
    expect(await left()).toEqual([{ image_id: failing, failures: 2, retry_at: formatTimestamp(minutes(now, 31)) }]);

    // Once its deletion works, it goes with its bytes.
    await sweepStalledInserts(env, minutes(now, 31));
    expect(await left()).toEqual([]);
    expect(await blobs()).toEqual([]);
  });
});

describe('finished insert transactions', () => {
  it('are kept INSERT_STATUS_RETENTION_HOURS (at least a day) after they finished, then deleted with their items', async () => {
    const app = await createApp('retention');
    const db = await catalogOf(app);
    const inserted = await insert(app, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    const { trans_id: finished } = await inserted.json<{ trans_id: number }>();
    expect((await waitForTransaction(app, finished)).success_count).toBe(1);
    const now = new Date();
    const at = (hours: number) => formatTimestamp(new Date(now.getTime() - hours * 3_600_000));
    // A second transaction finished lately, and a third whose item is still pending, long ago.
    const recent = 9_000_001;
    const pending = 9_000_002;
    for (const [id, time, state] of [[recent, at(23), 'done'], [pending, at(30), 'pending']] as const) {
      await db.batch([
        db.prepare('INSERT INTO insert_transactions (id, app_id, total, start_time, update_time) VALUES (?, ?, 1, ?, ?)').bind(id, app.app_id, time, time),
        db.prepare("INSERT INTO insert_items (trans_id, item_index, im_name, im_url, state) VALUES (?, 0, 'x', 'http://x', ?)").bind(id, state),
      ]);
    }
    await db.prepare('UPDATE insert_transactions SET update_time = ? WHERE id = ?').bind(at(25), finished).run();
    const left = async () =>
      (await db.prepare('SELECT id FROM insert_transactions WHERE app_id = ? ORDER BY id').bind(app.app_id).all<{ id: number }>()).results.map(({ id }) => id);
    const items = async (id: number) => (await db.prepare('SELECT count(*) AS n FROM insert_items WHERE trans_id = ?').bind(id).first<{ n: number }>())!.n;

    // Kept 48 hours when so set; a setting under a day counts as a day.
    await sweepStalledInserts({ ...env, INSERT_STATUS_RETENTION_HOURS: '48' }, now);
    expect(await left()).toEqual([finished, recent, pending].sort((a, b) => a - b));
    await sweepStalledInserts({ ...env, INSERT_STATUS_RETENTION_HOURS: '1' }, now);
    expect(await left()).toEqual([finished, recent, pending].sort((a, b) => a - b).filter((id) => id !== finished));
    expect(await items(finished)).toBe(0);
    expect(await items(pending)).toBe(1);
    // Its status is gone as an unknown transaction's is.
    const status = await call(`/insert/status/${finished}`, { headers: basicAuth(app) });
    expect(JSON.stringify(await status.json())).toMatch(/"status":"fail"/);
  });
});

describe('staged uploads', () => {
  it('a staged file no item names is deleted once a day old; one an item names is kept', async () => {
    const app = await createApp('orphans');
    const db = await catalogOf(app);
    const orphan = `${app.app_id}/staged/orphan-upload`;
    const named = `${app.app_id}/staged/named-upload`;
    await env.BLOBS.put(orphan, new Uint8Array([1, 2, 3]));
    await env.BLOBS.put(named, new Uint8Array([4, 5, 6]));
    await db.batch([
      db.prepare("INSERT INTO insert_transactions (id, app_id, total, start_time, update_time) VALUES (9000101, ?, 1, '', '')").bind(app.app_id),
      // Pending, and being worked on as far as the sweeper can tell (it is not sent again).
      db.prepare("INSERT INTO insert_items (trans_id, item_index, im_name, im_url, staged_key, started_at) VALUES (9000101, 0, 'x', '', ?, ?)").bind(
        named,
        formatTimestamp(minutes(new Date(), 26 * 60)),
      ),
    ]);
    const exists = async (key: string) => (await env.BLOBS.head(key)) !== null;
    // Every application is looked at within a few runs (20 a run); an hour old, nothing is deleted.
    for (let run = 0; run < 10; run++) await sweepStalledInserts(env, minutes(new Date(), 60));
    expect([await exists(orphan), await exists(named)]).toEqual([true, true]);
    for (let run = 0; run < 10; run++) await sweepStalledInserts(env, minutes(new Date(), 25 * 60));
    expect([await exists(orphan), await exists(named)]).toEqual([false, true]);
  });
});
