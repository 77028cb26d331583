import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index';
import { DEFER_SECONDS } from '../../src/ingest/retry-policy';
import { createTransaction } from '../../src/storage/transactions';
import { appOf, basicAuth, call, catalogOf, createApp, fixtureUrl, insert, insertAndWait, waitForTransaction, withRecordedQueues, type Credentials } from './helpers';

/**
 * Metadata-only updates have their own queue (wrangler.toml, UPDATE_QUEUE; docs/decisions.md, "Inserting"): one
 * waits for no image being downloaded and embedded, only for the earlier items of its own name.
 */

const HEN = fixtureUrl('/images/animals_birds_hen.png');
const BRAND = [{ name: 'brand', type: 'string' as const, searchable: true }];

const transIdOf = async (response: Response): Promise<number> => (await response.json<{ trans_id: number }>()).trans_id;

/** The percentage `/insert/status` answers for the transaction now. */
async function processedPercent(app: Credentials, transId: number): Promise<number> {
  const response = await call(`/insert/status/${transId}`, { headers: basicAuth(app) });
  return (await response.json<{ result: { processed_percent: number }[] }>()).result[0]!.processed_percent;
}

const metadataOf = async (app: Credentials, name: string): Promise<unknown> =>
  JSON.parse(
    (await (await catalogOf(app)).prepare('SELECT metadata FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, name).first<{ metadata: string }>())!
      .metadata,
  );

const startedAt = async (app: Credentials, transId: number): Promise<string | null> =>
  (await (await catalogOf(app)).prepare('SELECT started_at FROM insert_items WHERE trans_id = ?').bind(transId).first<{ started_at: string | null }>())!.started_at;

describe('the update queue', () => {
  it('applies a metadata-only update in seconds while the image queue works through a backlog', async () => {
    const app = await createApp('update-behind-backlog', BRAND);
    await insertAndWait(app, [{ im_name: 'item', im_url: HEN, brand: 'old' }]);
    // 30 images whose downloads hang until their 5 s timeout: three batches of 10, one after another, 15 s at least.
    const backlog = await transIdOf(await insert(app, Array.from({ length: 30 }, (_, k) => ({ im_name: `backlog-${k}`, im_url: fixtureUrl(`/hang/${k}`) }))));
    const sentAt = Date.now();
    const update = await transIdOf(await insert(app, [{ im_name: 'item', brand: 'new' }]));

    // Behind the backlog in the image queue, it could not be done before the backlog's third batch began.
    expect(await waitForTransaction(app, update, 5_000)).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
    expect(Date.now() - sentAt).toBeLessThan(5_000);
    expect(await processedPercent(app, backlog)).toBeLessThan(100);
    expect(await metadataOf(app, 'item')).toEqual({ brand: 'new' });

    expect(await waitForTransaction(app, backlog)).toMatchObject({ processed_percent: 100, success_count: 0, fail_count: 30 });
  });

  it('keeps an update waiting, on its own queue, for an earlier pending insert of its name, and applies it after that insert', async () => {
    const app = await createApp('update-waits-on-its-queue', [...BRAND, { name: 'price', type: 'float' }]);
    await insertAndWait(app, [{ im_name: 'item', im_url: HEN, brand: 'first', price: '1' }]);
    // An insert of the name accepted before the update, whose message the test sends itself later.
    const { database } = await appOf(app);
    const reinsert = await createTransaction(env, await appOf(app), [
      { index: 0, imName: 'item', imUrl: fixtureUrl('/images/animals_mammals_cats_tiger.png'), metadata: { brand: 'second', price: 2 } },
    ]);
    const update = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'item', imUrl: null, metadata: { price: 3 } }]);

    const recorded = withRecordedQueues();
    const batch = createMessageBatch('image-update', [{ id: 'u', timestamp: Date.now(), attempts: 1, body: { transId: update, index: 0, database } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, recorded.env);
    // Deferred as a new message on the update queue, not counted as started, and nothing sent to the image queue.
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['u']);
    expect(recorded.sent).toEqual({ INSERT_QUEUE: [], UPDATE_QUEUE: [{ transId: update, index: 0, database }] });
    expect(await startedAt(app, update)).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, (DEFER_SECONDS + 1) * 1000));
    expect(await processedPercent(app, update)).toBe(0);

    await env.INSERT_QUEUE.send({ transId: reinsert, index: 0, database });
    expect(await waitForTransaction(app, reinsert)).toMatchObject({ success_count: 1 });
    expect(await waitForTransaction(app, update, 20_000)).toMatchObject({ success_count: 1, fail_count: 0 });
    // Applied over the insert it waited for: the insert's brand, the update's price.
    expect(await metadataOf(app, 'item')).toEqual({ brand: 'second', price: 3 });
  });

  it('applies updates of one name in one batch one after another, in the order they were accepted, none waiting', async () => {
    const app = await createApp('updates-of-one-name', [...BRAND, { name: 'price', type: 'float' }]);
    await insertAndWait(app, [{ im_name: 'item', im_url: HEN, brand: 'first', price: '1' }]);
    const { database } = await appOf(app);
    const earlier = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'item', imUrl: null, metadata: { price: 2 } }]);
    const later = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'item', imUrl: null, metadata: { price: 3 } }]);

    const recorded = withRecordedQueues();
    // The later one first in the batch: the order of acceptance decides, not the batch's.
    const batch = createMessageBatch('image-update', [
      { id: 'later', timestamp: Date.now(), attempts: 1, body: { transId: later, index: 0, database } },
      { id: 'earlier', timestamp: Date.now(), attempts: 1, body: { transId: earlier, index: 0, database } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, recorded.env);
    // Both applied within the batch: neither was sent again to wait.
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(['earlier', 'later']);
    expect(recorded.sent).toEqual({ INSERT_QUEUE: [], UPDATE_QUEUE: [] });
    expect(await processedPercent(app, earlier)).toBe(100);
    expect(await processedPercent(app, later)).toBe(100);
    expect(await metadataOf(app, 'item')).toEqual({ brand: 'first', price: 3 });
  });

  it('sends an image item that reaches it to the image queue, and never processes it itself', async () => {
    const app = await createApp('image-on-update-queue');
    const { database } = await appOf(app);
    const image = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'strayed', imUrl: HEN, metadata: {} }]);

    const recorded = withRecordedQueues();
    const batch = createMessageBatch('image-update', [{ id: 'i', timestamp: Date.now(), attempts: 1, body: { transId: image, index: 0, database } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, recorded.env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['i']);
    expect(recorded.sent).toEqual({ INSERT_QUEUE: [{ transId: image, index: 0, database }], UPDATE_QUEUE: [] });
    expect(await startedAt(app, image)).toBeNull();

    // The image queue's consumer processes it.
    expect(await waitForTransaction(app, image)).toMatchObject({ success_count: 1, fail_count: 0 });
  });
});
