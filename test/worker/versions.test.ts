import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index';
import type { Env } from '../../src/env';
import { MAX_DETECTED_OBJECTS } from '../../src/ports/inference/types';
import { createTransaction } from '../../src/storage/transactions';
import { vectorMetadataKey } from '../../src/storage/vector-metadata';
import { colorVectors, imageVectors, objectVectors } from '../../src/storage/vectors';
import { allDatabases, databaseNames, basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, retiredLeft, runSweeper, search, waitForTransaction, withVectorIndex, type Credentials, catalogOf, appOf, transactionDatabase } from './helpers';

/**
 * Image versions (migrations/0008): an insert is all or nothing, a later operation on a name wins whatever order the
 * items finish in, and what a replaced, removed or failed version wrote is deleted. After each scenario, D1, R2 and
 * the vector indexes must agree: only the live version of each name has a row, bytes and vectors.
 */

type Row = { id: number; im_name: string; blob_key: string; object_count: number; metadata: string };

const rows = async (app: Credentials): Promise<Row[]> =>
  (
    await (await catalogOf(app)).prepare('SELECT id, im_name, blob_key, object_count, metadata FROM images WHERE app_id = ? ORDER BY im_name')
      .bind(app.app_id)
      .all<Row>()
  ).results;

const vectorIds = (id: number, objects: number): string[] => [String(id), ...Array.from({ length: objects }, (_, k) => `${id}.${k}`)];

/** Every version id the application ever had a vector or object of, from the allocator's range. */
async function strayVectors(app: Credentials, live: Row[]): Promise<string[]> {
  const liveIds = new Set(live.flatMap((row) => vectorIds(row.id, row.object_count)));
  const { results } = await (await catalogOf(app)).prepare('SELECT seq FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id WHERE t.app_id = ?')
    .bind(app.app_id)
    .all<{ seq: number }>();
  const candidates = results.flatMap((row) => vectorIds(row.seq, MAX_DETECTED_OBJECTS)).filter((id) => !liveIds.has(id));
  const found = await Promise.all([imageVectors(env, env.EMBED_MODEL), objectVectors(env, env.EMBED_MODEL), colorVectors(env)].map((index) => index.getByIds(candidates)));
  return found.flat().map((record) => record.id);
}

/**
 * D1, R2 and the vector indexes agree: each live row has its bytes and vectors, and nothing else is stored, nor any
 * vector left to rewrite. A consumer deletes what it retired just after settling its item, so that is waited for first.
 */
async function expectConsistent(app: Credentials): Promise<Row[]> {
  expect(await retiredLeft(app)).toBe(0);
  const live = await rows(app);
  for (const row of live) {
    expect(await env.BLOBS.head(row.blob_key), row.im_name).not.toBeNull();
    expect(await imageVectors(env, env.EMBED_MODEL).getByIds([String(row.id)]), row.im_name).toHaveLength(1);
  }
  const listed = await env.BLOBS.list({ prefix: `${app.app_id}/images/` });
  expect(listed.objects.map((object) => object.key).sort()).toEqual(live.map((row) => row.blob_key).sort());
  expect(await strayVectors(app, live)).toEqual([]);
  const stale = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM stale_vector_metadata WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
  expect(stale!.n).toBe(0);
  return live;
}

const injected = (what: string) => async (): Promise<never> => {
  throw new Error(`injected: ${what} failed`);
};

/** The Worker's environment with the local vector index failing every call of `method`, as a failing Vectorize would. */
const withFailingVectorIndex = (method: 'upsert' | 'deleteByIds'): Env => withVectorIndex(() => ({ [method]: injected(`vector ${method}`) }));

/** The Worker's environment with R2 failing every call of `method`. */
function withFailingBlobs(method: 'put' | 'delete'): Env {
  const failing = new Proxy(env.BLOBS, {
    get: (target, property) =>
      property === method ? injected(`R2 ${method}`) : (Reflect.get(target, property) as unknown as (...args: unknown[]) => unknown).bind(target),
  });
  return { ...env, BLOBS: failing };
}

/** The Worker's environment with each D1 database refusing every batch with a statement whose SQL contains `marker`. */
function withFailingD1Batch(marker: string): Env {
  const sqlOf = new WeakMap<D1PreparedStatement, string>();
  const failing = (db: D1Database) =>
    new Proxy(db, {
      get: (target, property) => {
        if (property === 'prepare') {
          // Bound statements are new objects: each carries its SQL on.
          const tagged = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
            sqlOf.set(statement, sql);
            const bind = statement.bind.bind(statement);
            statement.bind = (...values: unknown[]) => tagged(bind(...values), sql);
            return statement;
          };
          return (sql: string) => tagged(target.prepare(sql), sql);
        }
        if (property === 'batch') {
          return async (statements: D1PreparedStatement[]) => {
            if (statements.some((statement) => sqlOf.get(statement)?.includes(marker))) throw new Error('injected: D1 batch failed');
            return target.batch(statements);
          };
        }
        return (Reflect.get(target, property) as unknown as (...args: unknown[]) => unknown).bind(target);
      },
    });
  return { ...env, ...Object.fromEntries(databaseNames().map((name, k) => [name, failing(allDatabases()[k]!)])) };
}

/** Delivers one message of a transaction to the consumer with `workerEnv`, as the queue would. */
async function deliver(workerEnv: Env, queue: string, transId: number, attempts = 1): Promise<{ retried: boolean }> {
  const batch = createMessageBatch(queue, [{ id: `m-${transId}-${attempts}`, timestamp: Date.now(), attempts, body: { transId, index: 0, database: await transactionDatabase(transId) } }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, workerEnv);
  const result = await getQueueResult(batch, ctx);
  return { retried: result.retryMessages.length > 0 };
}

/**
 * An application whose `item` (a hen, brand `old`) is in the collection, and an accepted re-insert of it (a tiger,
 * brand `new`) whose message the test delivers itself.
 */
async function reinsertAccepted(name: string): Promise<{ app: Credentials; before: Row; transId: number }> {
  const app = await createApp(name, [{ name: 'brand', type: 'string', searchable: true }]);
  await insertAndWait(app, [{ im_name: 'item', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'old' }]);
  const [before] = await rows(app);
  const transId = await createTransaction(env, await appOf(app), [
    { index: 0, imName: 'item', imUrl: fixtureUrl('/images/animals_mammals_cats_tiger.png'), metadata: { brand: 'new' } },
  ]);
  return { app, before: before!, transId };
}

/** `/remove` of one name, answered by the Worker with `workerEnv`. */
async function removeWith(workerEnv: Env, app: Credentials, name: string): Promise<unknown> {
  const request = new Request('https://search.test/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': name }) });
  return (await worker.fetch(request, workerEnv, createExecutionContext())).json();
}

/** How an insert item a remove of its name overtook is listed (docs/decisions.md, "Removal and order"). */
const CANCELLED = { error_code: 111, error_message: 'Image removed before it was processed.' };

/** The best whole-image match of a test image by URL, with its score and metadata. */
async function bestMatch(app: Credentials, file: string): Promise<{ im_name: string; score: number; value_map: object } | undefined> {
  const response = await call('/uploadsearch', {
    method: 'POST',
    headers: basicAuth(app),
    body: new URLSearchParams({ im_url: fixtureUrl(`/images/${file}`), score: 'true', get_all_fl: 'true', detection: ' ' }),
  });
  return (await response.json<{ result: { im_name: string; score: number; value_map: object }[] }>()).result[0];
}

describe('image versions', () => {
  it('a failed insert leaves the previous version whole, and its own leftovers are deleted when it is given up', async () => {
    const { app, before, transId } = await reinsertAccepted('all-or-nothing');
    // The new version's bytes are stored, then its vector write fails: the queue is asked to retry.
    expect(await deliver(withFailingVectorIndex('upsert'), 'image-insert', transId)).toEqual({ retried: true });

    // Searches still see the old version, whole: its row, metadata, bytes and vector.
    expect(await rows(app)).toEqual([before]);
    const found = await search(app, 'im_name=item&get_all_fl=true');
    expect(found.body.status).toBe('OK');
    expect(await bestMatch(app, 'animals_birds_hen.png')).toEqual({ im_name: 'item', score: expect.closeTo(1, 3), value_map: { brand: 'old' } });

    // Past its retries the item goes to the dead-letter queue: failed, and what the new version wrote goes.
    await deliver(env, 'image-insert-dlq', transId, 5);
    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ processed_percent: 100, fail_count: 1 });
    await runSweeper();
    expect(await expectConsistent(app)).toEqual([before]);
  });

  it('an insert whose bytes cannot be stored is retried and changes nothing meanwhile; delivered again, it lands whole', async () => {
    const { app, before, transId } = await reinsertAccepted('r2-failing');
    expect(await deliver(withFailingBlobs('put'), 'image-insert', transId)).toEqual({ retried: true });
    expect(await rows(app)).toEqual([before]);
    // The queue's next delivery, with R2 back.
    expect(await deliver(env, 'image-insert', transId, 2)).toEqual({ retried: false });
    const [after] = await expectConsistent(app);
    expect(after!.id).toBeGreaterThan(before!.id);
    expect(JSON.parse(after!.metadata)).toEqual({ brand: 'new' });
  });

  it('an insert whose switch to the new version fails in D1 leaves the old version live and the new one invisible', async () => {
    const { app, before, transId } = await reinsertAccepted('d1-failing');
    // The batch that makes a version live is the one that inserts into images.
    expect(await deliver(withFailingD1Batch('INSERT INTO images'), 'image-insert', transId)).toEqual({ retried: true });
    // Bytes and vectors of the new version are written, but nothing shows them: the old version answers, whole.
    expect(await rows(app)).toEqual([before]);
    const match = await bestMatch(app, 'animals_mammals_cats_tiger.png');
    expect(match?.value_map).toEqual({ brand: 'old' });
    expect(match!.score).toBeLessThan(0.99);
    // Given up: the dead-letter consumer retires what it wrote, and the sweeper deletes it.
    await deliver(env, 'image-insert-dlq', transId, 5);
    await runSweeper();
    expect(await expectConsistent(app)).toEqual([before]);
  });

  it('a remove whose vector deletes fail hides the image at once, and the sweeper deletes what it left', async () => {
    const app = await createApp('remove-halfway');
    await insertAndWait(app, [
      { im_name: 'gone', im_url: fixtureUrl('/images/animals_birds_hen.png') },
      { im_name: 'kept', im_url: fixtureUrl('/images/animals_birds_rooster.png') },
    ]);
    const [gone] = await rows(app);
    expect(await removeWith(withFailingVectorIndex('deleteByIds'), app, 'gone')).toMatchObject({ status: 'OK', total: 1 });
    expect((await search(app, 'im_name=gone')).body.error).toEqual(['Image not found with im_name.']);
    expect((await search(app, 'im_name=kept')).body.result).toEqual([]);
    // Left for later: the retired version, still holding its vector.
    expect(await imageVectors(env, env.EMBED_MODEL).getByIds([String(gone!.id)])).toHaveLength(1);
    await runSweeper();
    expect((await expectConsistent(app)).map((row) => row.im_name)).toEqual(['kept']);
  });

  it('a remove whose D1 batch fails changes nothing: the image stays, whole and searchable', async () => {
    const app = await createApp('remove-d1-failing');
    await insertAndWait(app, [{ im_name: 'stays', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    const before = await rows(app);
    expect(await removeWith(withFailingD1Batch('DELETE FROM images'), app, 'stays')).toMatchObject({ status: 'fail', error: ['A system error is reported and we are fixing it right now.'] });
    expect(await expectConsistent(app)).toEqual(before);
    expect((await search(app, 'im_name=stays')).body.status).toBe('OK');
  });

  it('a re-insert whose old bytes cannot be deleted lands, and the sweeper deletes them later', async () => {
    const { app, before, transId } = await reinsertAccepted('retired-r2-failing');
    expect(await deliver(withFailingBlobs('delete'), 'image-insert', transId)).toEqual({ retried: false });
    const [after] = await rows(app);
    expect(after!.id).toBeGreaterThan(before!.id);
    expect(await env.BLOBS.head(before!.blob_key)).not.toBeNull();
    await runSweeper();
    expect(await expectConsistent(app)).toEqual([after]);
  });

  it('a remove overtaking an insert of the name in work fails it (111), and its version never becomes live', async () => {
    const { app, transId } = await reinsertAccepted('remove-wins');
    // The remove comes while the new version's vectors are written, before the batch that would make it live.
    let removed: Promise<unknown> | undefined;
    const meetsRemove = withVectorIndex((stub) => ({
      upsert: async (...args: Parameters<typeof stub.upsert>) => {
        removed ??= removeWith(env, app, 'item');
        await removed;
        return stub.upsert(...args);
      },
    }));
    expect(await deliver(meetsRemove, 'image-insert', transId)).toEqual({ retried: false });
    expect(await removed).toMatchObject({ status: 'OK', total: 1 });

    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ success_count: 0, fail_count: 1, error_list: [{ im_name: 'item', ...CANCELLED }] });
    expect((await search(app, 'im_name=item')).body.error).toEqual(['Image not found with im_name.']);
    expect(await expectConsistent(app)).toEqual([]);
  });

  it('a remove of a name only waiting to be inserted counts it removed and fails its insert, whose message then does nothing', async () => {
    const app = await createApp('remove-first');
    const transId = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'early', imUrl: fixtureUrl('/images/animals_birds_hen.png'), metadata: {} }]);
    expect(await removeWith(env, app, 'early')).toEqual({ status: 'OK', method: 'remove', total: 1, result: [], error: [] });
    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ success_count: 0, fail_count: 1, error_list: [{ im_name: 'early', ...CANCELLED }] });
    expect(await deliver(env, 'image-insert', transId)).toEqual({ retried: false });
    expect(await expectConsistent(app)).toEqual([]);
    // A later insert of the name is applied as usual.
    await insertAndWait(app, [{ im_name: 'early', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    expect((await expectConsistent(app)).map((row) => row.im_name)).toEqual(['early']);
  });

  it('of two entries with one name in one call, the later index wins, whichever finishes first', async () => {
    const app = await createApp('same-name');
    const { trans_id: transId } = await (
      await insert(app, [
        { im_name: 'twice', im_url: fixtureUrl('/slow/animals_birds_hen.png') },
        { im_name: 'twice', im_url: fixtureUrl('/images/animals_mammals_cats_tiger.png') },
      ])
    ).json<{ trans_id: number }>();
    expect(await waitForTransaction(app, transId)).toMatchObject({ processed_percent: 100, success_count: 2 });
    const [row] = await expectConsistent(app);
    const tiger = await (await fetch(fixtureUrl('/images/animals_mammals_cats_tiger.png'))).arrayBuffer();
    expect((await (await env.BLOBS.get(row!.blob_key))!.arrayBuffer()).byteLength).toBe(tiger.byteLength);
  });

  it('a metadata-only update waits for an insert of the name accepted before it, then applies over it', async () => {
    const app = await createApp('update-order', [{ name: 'brand', type: 'string' }, { name: 'price', type: 'float' }]);
    await insertAndWait(app, [{ im_name: 'item', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'first', price: '1' }]);
    const reinserted = await (await insert(app, [{ im_name: 'item', im_url: fixtureUrl('/slow/animals_mammals_cats_tiger.png'), brand: 'second', price: '2' }])).json<{ trans_id: number }>();
    const updated = await (await insert(app, [{ im_name: 'item', price: '3' }])).json<{ trans_id: number }>();
    await waitForTransaction(app, updated.trans_id);
    await waitForTransaction(app, reinserted.trans_id);
    const [row] = await expectConsistent(app);
    expect(JSON.parse(row!.metadata)).toEqual({ brand: 'second', price: 3 });
  });

  it('metadata-only updates of a name apply in the order they were accepted, one deferred behind a slow insert included', async () => {
    const app = await createApp('update-after-update', [{ name: 'brand', type: 'string', searchable: true }]);
    await insertAndWait(app, [
      { im_name: 'n1', im_url: fixtureUrl('/images/animals_birds_rooster.png'), brand: 'other' },
      { im_name: 'n2', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'first' },
    ]);
    const accepted = async (images: Record<string, string>[]) => (await (await insert(app, images)).json<{ trans_id: number }>()).trans_id;
    const reinserted = await accepted([{ im_name: 'n2', im_url: fixtureUrl('/slow/animals_birds_hen.png') }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A waits for the slow insert; B, accepted once that is done, has no insert before it: once B overtook A.
    const first = await accepted([{ im_name: 'n2', brand: 'A' }]);
    await waitForTransaction(app, reinserted);
    const second = await accepted([{ im_name: 'n2', brand: 'B' }]);
    expect(await waitForTransaction(app, first)).toMatchObject({ success_count: 1 });
    expect(await waitForTransaction(app, second)).toMatchObject({ success_count: 1 });

    const live = await expectConsistent(app);
    const n2 = live.find((row) => row.im_name === 'n2')!;
    expect(JSON.parse(n2.metadata)).toEqual({ brand: 'B' });
    const [vector] = await imageVectors(env, env.EMBED_MODEL).getByIds([String(n2.id)]);
    expect(vector!.metadata).toEqual({ [vectorMetadataKey('brand')!]: 'B' });
    const found = await search(app, 'im_name=n1&fl=brand&fq=brand:B');
    expect(found.body.result).toEqual([expect.objectContaining({ im_name: 'n2', value_map: { brand: 'B' } })]);
  });

  it('a metadata update whose vector rewrite meets a remove of its image writes no vector back for good', async () => {
    const app = await createApp('update-meets-remove', [{ name: 'brand', type: 'string', searchable: true }]);
    await insertAndWait(app, [{ im_name: 'item', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'old' }]);
    const transId = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'item', imUrl: null, metadata: { brand: 'new' } }]);
    // The remove comes after the update read the vectors and before it writes them back with the new metadata.
    let removed: Promise<unknown> | undefined;
    const meetsRemove = withVectorIndex((stub) => ({
      getByIds: async (ids: string[]) => {
        const records = await stub.getByIds(ids);
        removed ??= removeWith(env, app, 'item');
        await removed;
        return records;
      },
    }));
    expect(await deliver(meetsRemove, 'image-update', transId)).toEqual({ retried: false });
    expect(await removed).toMatchObject({ status: 'OK', total: 1 });
    // The remove came first: the update is failed, not counted a success over an image that is gone.
    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ success_count: 0, fail_count: 1, error_list: [{ im_name: 'item', ...CANCELLED }] });
    expect(await expectConsistent(app)).toEqual([]);
  });

  it('a metadata update given up after its D1 merge leaves D1 and the vector index agreeing once the sweeper ran', async () => {
    const app = await createApp('update-given-up', [{ name: 'brand', type: 'string', searchable: true }]);
    await insertAndWait(app, [
      { im_name: 'probe', im_url: fixtureUrl('/images/animals_birds_rooster.png'), brand: 'other' },
      { im_name: 'item', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'old' },
    ]);
    const transId = await createTransaction(env, await appOf(app), [{ index: 0, imName: 'item', imUrl: null, metadata: { brand: 'new' } }]);
    // Merged into D1, then the vectors cannot be written, in every delivery: the dead-letter consumer gives it up.
    expect(await deliver(withFailingVectorIndex('upsert'), 'image-update', transId)).toEqual({ retried: true });
    await deliver(env, 'image-update-dlq', transId, 5);
    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ processed_percent: 100, fail_count: 1 });

    await runSweeper();
    const item = (await expectConsistent(app)).find((row) => row.im_name === 'item')!;
    expect(JSON.parse(item.metadata)).toEqual({ brand: 'new' });
    const [vector] = await imageVectors(env, env.EMBED_MODEL).getByIds([String(item.id)]);
    expect(vector!.metadata).toEqual({ [vectorMetadataKey('brand')!]: 'new' });
    // fq pushed down to the vector index and fl read from D1 answer alike.
    const found = await search(app, 'im_name=probe&fl=brand&fq=brand:new');
    expect(found.body.result).toEqual([expect.objectContaining({ im_name: 'item', value_map: { brand: 'new' } })]);
  });
});
