import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index';
import { INSERT_ITEMS_IN_FLIGHT } from '../../src/ingest/in-flight';
import { MAX_SWEEPS, STALL_MINUTES } from '../../src/ingest/sweeper';
import { createTransaction } from '../../src/storage/transactions';
import { formatTimestamp } from '../../src/time';
import {
  allDatabases,
  appOf,
  basicAuth,
  call,
  catalogOf,
  createApp,
  fixtureUrl,
  insertAndWait,
  runSweeper,
  transactionDb,
  waitForTransaction,
  withRecordedQueues,
  type Credentials,
} from './helpers';

/**
 * Accepted images whose queue messages are lost or poisoned still end: the dead-letter consumer fails them, and the
 * sweeper sends a stalled transaction's pending items again. The transactions are made as /insert makes them, minus
 * the messages, as if these had been lost.
 */

const GENERAL_SYSTEM_ERROR = 'A system error is reported and we are fixing it right now.';

async function acceptedWithoutMessages(app: Credentials, names: string[]): Promise<number> {
  return createTransaction(
    env,
    await appOf(app),
    names.map((name, index) => ({ index, imName: name, imUrl: fixtureUrl('/images/skimage_chelsea.jpg'), metadata: {} })),
  );
}

const ago = (minutes: number): string => formatTimestamp(new Date(Date.now() - minutes * 60_000));

/** Moves a transaction's acceptance back by `minutes`, and makes the queue look idle as long: nothing started since. */
async function age(transId: number, minutes: number): Promise<void> {
  for (const db of allDatabases()) {
    await db.batch([
      db.prepare('UPDATE insert_transactions SET start_time = ?, update_time = ? WHERE id = ?').bind(ago(minutes), ago(minutes), transId),
      db.prepare('UPDATE insert_items SET started_at = ? WHERE started_at > ?').bind(ago(minutes), ago(minutes)),
    ]);
  }
}

const sweepsOf = async (transId: number): Promise<number[]> =>
  (await (await transactionDb(transId)).prepare('SELECT sweeps FROM insert_items WHERE trans_id = ? ORDER BY item_index').bind(transId).all<{ sweeps: number }>()).results.map((row) => row.sweeps);

/** A metadata-only update of `name` (brand `brand`), accepted as /insert accepts one, minus its message. */
const updateWithoutMessage = async (app: Credentials, name: string, brand: string): Promise<number> =>
  createTransaction(env, await appOf(app), [{ index: 0, imName: name, imUrl: null, metadata: { brand } }]);

const brandOf = async (app: Credentials, name: string): Promise<unknown> =>
  JSON.parse((await (await catalogOf(app)).prepare('SELECT metadata FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, name).first<{ metadata: string }>())!.metadata).brand;

const pendingCount = async (transId: number): Promise<number> =>
  (await (await transactionDb(transId)).prepare("SELECT count(*) AS n FROM insert_items WHERE trans_id = ? AND state = 'pending'").bind(transId).first<{ n: number }>())!.n;

describe('a message delivered more than once', () => {
  it('is processed once: the image stored once and counted once', async () => {
    const app = await createApp('redelivered');
    const transId = await acceptedWithoutMessages(app, ['twice']);
    const message = { body: { transId, index: 0, database: (await appOf(app)).database } };
    // In one batch (processed side by side) and again later (after the item is settled).
    await env.INSERT_QUEUE.sendBatch([message, message]);
    const status = await waitForTransaction(app, transId);
    await env.INSERT_QUEUE.send(message.body);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0, total: 1 });
    expect(await waitForTransaction(app, transId)).toMatchObject({ success_count: 1, fail_count: 0 });
    const rows = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM images WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });
});

describe('a batch larger than the items handled at once', () => {
  it('goes through as a pool: never more than INSERT_ITEMS_IN_FLIGHT images at once, every item settled', async () => {
    const app = await createApp('pooled-batch');
    const count = INSERT_ITEMS_IN_FLIGHT + 3;
    // Each download is held two seconds by the fixture server, which counts those open at once under the tag.
    const tag = `pool-${crypto.randomUUID()}`;
    const transId = await createTransaction(
      env,
      await appOf(app),
      Array.from({ length: count }, (_, index) => ({ index, imName: `pooled-${index}`, imUrl: fixtureUrl(`/slow/skimage_chelsea.jpg/${tag}`), metadata: {} })),
    );
    const { database } = await appOf(app);
    const batch = createMessageBatch(
      'image-insert',
      Array.from({ length: count }, (_, index) => ({ id: `m${index}`, timestamp: Date.now(), attempts: 1, body: { transId, index, database } })),
    );
    const ctx = createExecutionContext();
    await worker.queue(batch, env);

    expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(count);
    expect(Number(await (await fetch(fixtureUrl(`/slow-peak/${tag}`))).text())).toBe(INSERT_ITEMS_IN_FLIGHT);
    expect(await waitForTransaction(app, transId)).toMatchObject({ processed_percent: 100, success_count: count, fail_count: 0 });
  });
});

describe('dead letters', () => {
  it('fail their item with the system error, and leave an item already settled as it is', async () => {
    const app = await createApp('dead-letters');
    const transId = await acceptedWithoutMessages(app, ['poisoned', 'settled']);
    await (await catalogOf(app)).prepare("UPDATE insert_items SET state = 'done' WHERE trans_id = ? AND item_index = 1").bind(transId).run();

    const { database } = await appOf(app);
    const batch = createMessageBatch('image-insert-dlq', [
      { id: 'a', timestamp: Date.now(), attempts: 1, body: { transId, index: 0, database } },
      { id: 'b', timestamp: Date.now(), attempts: 1, body: { transId, index: 1, database } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(['a', 'b']);

    const status = await waitForTransaction(app, transId, 1_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 1 });
    expect(status.error_list).toEqual([{ im_name: 'poisoned', error_code: 500, error_message: GENERAL_SYSTEM_ERROR }]);
  });

  it("of the update queue fail their metadata-only update with the system error, the image's version left as it was", async () => {
    const app = await createApp('update-dead-letters', [{ name: 'brand', type: 'string', searchable: true }]);
    await insertAndWait(app, [{ im_name: 'kept', im_url: fixtureUrl('/images/skimage_chelsea.jpg'), brand: 'old' }]);
    const transId = await updateWithoutMessage(app, 'kept', 'new');

    const batch = createMessageBatch('image-update-dlq', [{ id: 'u', timestamp: Date.now(), attempts: 5, body: { transId, index: 0, database: (await appOf(app)).database } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['u']);

    const status = await waitForTransaction(app, transId, 1_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 0, fail_count: 1 });
    expect(status.error_list).toEqual([{ im_name: 'kept', error_code: 500, error_message: GENERAL_SYSTEM_ERROR }]);
    expect(await brandOf(app, 'kept')).toBe('old');
    const search = await call('/search?im_name=kept', { headers: basicAuth(app) });
    expect((await search.json<{ status: string }>()).status).toBe('OK');
  });
});

describe('the sweeper', () => {
  it('sends the pending items of a stalled transaction again, and they are processed once', async () => {
    const app = await createApp('sweeper');
    const transId = await acceptedWithoutMessages(app, ['lost-0', 'lost-1']);
    await age(transId, STALL_MINUTES + 1);

    await runSweeper();
    const status = await waitForTransaction(app, transId);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 2, fail_count: 0, total: 2 });
    const search = await call(`/search?im_name=lost-0`, { headers: basicAuth(app) });
    expect(search.status).toBe(200);
    expect((await search.json<{ status: string }>()).status).toBe('OK');
    // Settled: a later sweep finds nothing to send.
    await age(transId, STALL_MINUTES + 1);
    await runSweeper();
    expect(await pendingCount(transId)).toBe(0);
  });

  it('recovers a lost image item that a metadata update of its name waits for: the waiting update is no work under way', async () => {
    const app = await createApp('sweeper-update-waits');
    const image = await acceptedWithoutMessages(app, ['waited-for']);
    const update = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'waited-for', imUrl: null, metadata: { brand: 'acme' } }]);
    await age(image, STALL_MINUTES + 1);
    // The update is delivered, finds the earlier image item pending and waits as a new message.
    const batch = createMessageBatch('image-update', [{ id: 'u', timestamp: Date.now(), attempts: 1, body: { transId: update, index: 0, database: (await appOf(app)).database } }]);
    await worker.queue(batch, env);
    const started = await (await catalogOf(app)).prepare('SELECT started_at FROM insert_items WHERE trans_id = ?').bind(update).first<{ started_at: string | null }>();
    expect(started?.started_at).toBeNull();

    await runSweeper();
    expect(await waitForTransaction(app, image)).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
    expect(await waitForTransaction(app, update)).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
  });

  it('sends a lost metadata-only update to the update queue, where it is applied', async () => {
    const app = await createApp('sweeper-update', [{ name: 'brand', type: 'string', searchable: true }]);
    await insertAndWait(app, [{ im_name: 'known', im_url: fixtureUrl('/images/skimage_chelsea.jpg'), brand: 'old' }]);
    const update = await updateWithoutMessage(app, 'known', 'new');
    await age(update, STALL_MINUTES + 1);

    const recorded = withRecordedQueues();
    await runSweeper(recorded.env);
    const message = { transId: update, index: 0, database: (await appOf(app)).database };
    expect(recorded.sent.UPDATE_QUEUE).toContainEqual(message);
    expect(recorded.sent.INSERT_QUEUE).not.toContainEqual(message);
    expect(await waitForTransaction(app, update)).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
    expect(await brandOf(app, 'known')).toBe('new');
  });

  it('sends a lost image again while only updates are being started: their queue says nothing of the image queue', async () => {
    const app = await createApp('sweeper-updates-busy');
    const lost = await acceptedWithoutMessages(app, ['lost-image']);
    await age(lost, STALL_MINUTES + 1);
    const working = await updateWithoutMessage(app, 'in-work', 'any');
    await (await catalogOf(app)).prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ?').bind(ago(1), working).run();

    const recorded = withRecordedQueues();
    await runSweeper(recorded.env);
    expect(recorded.sent.INSERT_QUEUE).toContainEqual({ transId: lost, index: 0, database: (await appOf(app)).database });
    expect(await waitForTransaction(app, lost)).toMatchObject({ processed_percent: 100, success_count: 1 });
  });

  it('leaves a never-started update alone while the image queue is at work: it may be waiting for an image of its name', async () => {
    const app = await createApp('sweeper-images-busy');
    const waiting = await updateWithoutMessage(app, 'waiting', 'any');
    await age(waiting, STALL_MINUTES + 1);
    const working = await acceptedWithoutMessages(app, ['in-work']);
    await (await catalogOf(app)).prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ?').bind(ago(1), working).run();

    await runSweeper();
    expect(await sweepsOf(waiting)).toEqual([0]);
    expect(await pendingCount(waiting)).toBe(1);
  });

  it('leaves a transaction that is still making progress alone', async () => {
    const app = await createApp('sweeper-recent');
    const transId = await acceptedWithoutMessages(app, ['recent']);
    await age(transId, STALL_MINUTES - 5);
    await runSweeper();
    expect(await sweepsOf(transId)).toEqual([0]);
    expect(await pendingCount(transId)).toBe(1);
  });

  it('leaves items queued behind a backlog alone, however old, while a consumer keeps starting others', async () => {
    const app = await createApp('sweeper-backlog');
    const queued = await acceptedWithoutMessages(app, ['queued-0', 'queued-1']);
    await age(queued, 3 * STALL_MINUTES);
    // Another import's item was started a minute ago: the consumer is working through the queue.
    const working = await acceptedWithoutMessages(app, ['in-work']);
    await (await catalogOf(app)).prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ?').bind(ago(1), working).run();
    await runSweeper();
    expect(await sweepsOf(queued)).toEqual([0, 0]);
    expect(await pendingCount(queued)).toBe(2);
  });

  it('sends again an item a consumer started and never settled, even while others progress', async () => {
    const app = await createApp('sweeper-died');
    const transId = await acceptedWithoutMessages(app, ['died-0']);
    await (await catalogOf(app)).prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ?').bind(ago(STALL_MINUTES + 1), transId).run();
    const working = await acceptedWithoutMessages(app, ['in-work']);
    await (await catalogOf(app)).prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ?').bind(ago(1), working).run();
    await runSweeper();
    expect(await sweepsOf(transId)).toEqual([1]);
    const status = await waitForTransaction(app, transId);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1 });
  });

  it(`fails an item sent again ${MAX_SWEEPS} times in vain, so the transaction reaches 100`, async () => {
    const app = await createApp('sweeper-exhausted');
    const transId = await acceptedWithoutMessages(app, ['hopeless']);
    await (await catalogOf(app)).prepare('UPDATE insert_items SET sweeps = ? WHERE trans_id = ?').bind(MAX_SWEEPS, transId).run();
    await age(transId, STALL_MINUTES + 1);

    await runSweeper();
    const status = await waitForTransaction(app, transId, 1_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 0, fail_count: 1 });
    expect(status.error_list[0]).toMatchObject({ im_name: 'hopeless', error_code: 500 });
  });
});
