import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { MAX_FILE_BYTES } from '../../src/http/params';
import worker from '../../src/index';
import { createTransaction } from '../../src/storage/transactions';
import { appOf, basicAuth, call, catalogOf, createApp, fixtureUrl, imageBytes, runSweeper, transactionDb, uploadsearch, waitForTransaction, type Credentials } from './helpers';

/** Images sent to /insert as files (`image[i]`, docs/api.md, POST /insert): checked at once, staged, stored as downloaded ones. */

type InsertBody = { status: string; trans_id?: number; total: number; error: Record<string, unknown>[] };

const FRUITS = '/images/opencv-doc_fruits.jpg';
const SMALL = '/images/food_fruit_apple_fuji.png';

/** A multipart `/insert`: Blobs as file parts, strings as text parts, each under `{key}[i]`. */
async function insertForm(app: Credentials, images: Record<string, string | Blob>[], workerEnv?: Env): Promise<Response> {
  const form = new FormData();
  images.forEach((image, index) => {
    for (const [key, value] of Object.entries(image)) {
      if (value instanceof Blob) form.append(`${key}[${index}]`, value, `${key}-${index}`);
      else form.append(`${key}[${index}]`, value);
    }
  });
  const init = { method: 'POST', headers: basicAuth(app), body: form };
  if (!workerEnv) return call('/insert', init);
  return worker.fetch(new Request('https://search.test/insert', init), workerEnv, createExecutionContext());
}

const stagedObjects = async (app: Credentials): Promise<string[]> =>
  (await env.BLOBS.list({ prefix: `${app.app_id}/staged/` })).objects.map((object) => object.key);

const stagedKeys = async (transId: number): Promise<(string | null)[]> =>
  (await (await transactionDb(transId)).prepare('SELECT staged_key FROM insert_items WHERE trans_id = ? ORDER BY item_index').bind(transId).all<{ staged_key: string | null }>()).results.map(
    (row) => row.staged_key,
  );

/** Waits (a few seconds at most) until the consumer, which deletes a staged file just after it settles the item, is done. */
async function stagedLeft(app: Credentials): Promise<string[]> {
  for (let tries = 0; tries < 50 && (await stagedObjects(app)).length > 0; tries++) await new Promise((resolve) => setTimeout(resolve, 100));
  return stagedObjects(app);
}

/** A multipart body of one part per field, files as raw bytes under a part with no filename. */
async function withoutFilenames(fields: [string, string | Blob][]): Promise<RequestInit> {
  const encoder = new TextEncoder();
  const pieces: Uint8Array[] = [];
  for (const [name, value] of fields) {
    pieces.push(encoder.encode(`--b\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`));
    pieces.push(typeof value === 'string' ? encoder.encode(value) : new Uint8Array(await value.arrayBuffer()));
    pieces.push(encoder.encode('\r\n'));
  }
  pieces.push(encoder.encode('--b--\r\n'));
  return { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=b' }, body: new Blob(pieces) };
}

describe('POST /insert with a file', () => {
  it('takes a file over 10 MB as its image\'s 106, the other images going on', async () => {
    const app = await createApp('big-files');
    const fruits = await imageBytes(FRUITS);
    // The JPEG with zeros after it: an image by its header, and as long as asked.
    const padded = (size: number) => new Blob([fruits, new Uint8Array(size - fruits.size)]);
    for (const size of [MAX_FILE_BYTES + 1, Math.round(15.6e6)]) {
      const response = await insertForm(app, [{ im_name: 'over', image: padded(size) }, { im_name: 'fine', image: fruits }]);
      const body = await response.json<InsertBody>();
      expect(body).toMatchObject({ status: 'warning', total: 1 });
      expect(body.error).toEqual([{ index: 0, im_name: 'over', error_code: 106, error_message: 'image exceeds length limit.' }]);
      expect(await waitForTransaction(app, body.trans_id!)).toMatchObject({ success_count: 1, fail_count: 0 });
    }
    const atTheLimit = await insertForm(app, [{ im_name: 'at-limit', image: padded(MAX_FILE_BYTES) }]);
    expect(await atTheLimit.json<InsertBody>()).toMatchObject({ status: 'OK', total: 1, error: [] });
  });

  it('reads a part named image[i] as the file even without a filename, as /uploadsearch reads image', async () => {
    const app = await createApp('no-filename');
    const fruits = await imageBytes(FRUITS);
    const init = await withoutFilenames([['im_name[0]', 'fruits'], ['image[0]', fruits]]);
    const response = await call('/insert', { ...init, headers: { ...init.headers, ...basicAuth(app) } });
    const body = await response.json<InsertBody>();
    expect(body).toMatchObject({ status: 'OK', total: 1, error: [] });
    expect(body).not.toHaveProperty('ignored_fields');
    expect(await waitForTransaction(app, body.trans_id!)).toMatchObject({ success_count: 1 });
    const search = await withoutFilenames([['image', fruits]]);
    const found = await (await call('/uploadsearch', { ...search, headers: { ...search.headers, ...basicAuth(app) } })).json<{ status: string; result: { im_name: string }[] }>();
    expect(found).toMatchObject({ status: 'OK', result: [{ im_name: 'fruits' }] });
  });

  it('refuses image[i] sent as text, saying it must be a file', async () => {
    const app = await createApp('image-as-text');
    const response = await call('/insert', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': 'a', 'image[0]': 'iVBORw0KGgo=' }) });
    expect(await response.json()).toEqual({
      status: 'fail',
      method: 'insert',
      error: ['image[0] must be a file, sent in a multipart/form-data body.'],
      total: 0,
      result: [],
    });
  });

  it('stores the file as a downloaded image: searchable, its bytes served by /image, the staged copy deleted', async () => {
    const app = await createApp('upload', [{ name: 'brand', type: 'string', searchable: true }]);
    const file = await imageBytes(FRUITS);
    const response = await insertForm(app, [{ im_name: 'fruits', image: file, brand: 'orchard' }]);
    expect(response.status).toBe(200);
    const body = await response.json<InsertBody>();
    expect(body).toMatchObject({ status: 'OK', total: 1, error: [] });
    expect(await waitForTransaction(app, body.trans_id!)).toMatchObject({ success_count: 1, fail_count: 0 });

    const found = await uploadsearch(app, { image: file, fl: 'brand' });
    expect(found.body.result[0]).toMatchObject({ im_name: 'fruits', value_map: { brand: 'orchard' } });
    const served = await call('/image?im_name=fruits', { headers: basicAuth(app) });
    expect(served.headers.get('content-type')).toBe('image/jpeg');
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(new Uint8Array(await file.arrayBuffer()));
    const row = await (await catalogOf(app)).prepare('SELECT blob_key FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, 'fruits').first<{ blob_key: string }>();
    expect(row?.blob_key).toMatch(new RegExp(`^${app.app_id}/images/fruits/`));

    expect(await stagedLeft(app)).toEqual([]);
    expect(await stagedKeys(body.trans_id!)).toEqual([null]);
  });

  it('refuses in the answer a file too small (203) or no image (202), and a file sent with im_url; nothing of them staged', async () => {
    const app = await createApp('refused');
    const response = await insertForm(app, [
      { im_name: 'small', image: await imageBytes(SMALL) },
      { im_name: 'text', image: new Blob(['not an image, only some text']) },
      { im_name: 'both', image: await imageBytes(FRUITS), im_url: fixtureUrl(FRUITS) },
      { im_name: 'fine', im_url: fixtureUrl('/status/404') },
    ]);
    const body = await response.json<InsertBody>();
    expect(body).toMatchObject({ status: 'warning', total: 1 });
    expect(body.error).toEqual([
      { index: 0, im_name: 'small', error_code: 203, error_message: 'Unsupported image dimension.' },
      { index: 1, im_name: 'text', error_code: 202, error_message: 'Unsupported image format.' },
      { index: 2, im_name: 'both', error_code: 110, error_message: 'Only one of image and im_url may be given.' },
    ]);
    expect(await stagedObjects(app)).toEqual([]);
  });

  it('answers fail with 104 when every file is refused', async () => {
    const app = await createApp('all-refused');
    const body = await (await insertForm(app, [{ im_name: 'small', image: await imageBytes(SMALL) }])).json<InsertBody>();
    expect(body).toMatchObject({ status: 'fail', total: 0 });
    expect(body.error.map((entry) => entry.error_code)).toEqual([203, 104]);
  });

  it('deletes the staged copy of a file that fails later (the inference service cannot decode it)', async () => {
    const app = await createApp('undecodable');
    // A JPEG header the probe reads (200 x 200), then no image data.
    const header = new Uint8Array(await (await imageBytes(FRUITS)).arrayBuffer()).slice(0, 2);
    const sof = [0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0xc8, 0x00, 0xc8, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01];
    const broken = new Blob([header, new Uint8Array(sof), new Uint8Array(64)]);
    const body = await (await insertForm(app, [{ im_name: 'broken', image: broken }])).json<InsertBody>();
    expect(body).toMatchObject({ status: 'OK', total: 1 });
    const status = await waitForTransaction(app, body.trans_id!);
    expect(status.error_list).toEqual([{ im_name: 'broken', error_code: 202, error_message: 'Unsupported image format.' }]);
    expect(await stagedLeft(app)).toEqual([]);
  });
});

describe('a file that cannot be staged', () => {
  it('is refused in the answer with the system error, not accepted', async () => {
    const app = await createApp('staging-fails');
    const failing = { ...env, BLOBS: { ...env.BLOBS, put: () => Promise.reject(new Error('R2 is down')) } } as unknown as Env;
    const body = await (await insertForm(app, [{ im_name: 'lost', image: await imageBytes(FRUITS) }], failing)).json<InsertBody>();
    expect(body).toMatchObject({ status: 'fail', total: 0 });
    expect(body.error.map((entry) => entry.error_code)).toEqual([500, 104]);
  });

  it('is deleted again when the transaction is taken back (its messages could not be sent)', async () => {
    const app = await createApp('enqueue-fails');
    const failing = { ...env, INSERT_QUEUE: { sendBatch: () => Promise.reject(new Error('queue is down')) } } as unknown as Env;
    const response = await insertForm(app, [{ im_name: 'taken-back', image: await imageBytes(FRUITS) }], failing);
    expect(await response.json()).toMatchObject({ status: 'fail', error: ['System busy, please try again later.'] });
    expect(await stagedObjects(app)).toEqual([]);
  });
});

describe('a staged file', () => {
  async function stagedItem(app: Credentials, name: string): Promise<{ transId: number; key: string }> {
    const key = `${app.app_id}/staged/${name}`;
    await env.BLOBS.put(key, await (await imageBytes(FRUITS)).arrayBuffer());
    // Recorded as /insert records it, minus the message, as if it had been lost.
    const transId = await createTransaction(env, await appOf(app), [{ index: 0, imName: name, imUrl: null, stagedKey: key, metadata: {} }]);
    return { transId, key };
  }

  it('is deleted when its item is given up (a dead letter)', async () => {
    const app = await createApp('staged-dead-letter');
    const { transId } = await stagedItem(app, 'given-up');
    const batch = createMessageBatch('image-insert-dlq', [{ id: 'a', timestamp: Date.now(), attempts: 5, body: { transId, index: 0, database: (await appOf(app)).database } }]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['a']);

    expect(await waitForTransaction(app, transId, 1_000)).toMatchObject({ fail_count: 1 });
    expect(await stagedObjects(app)).toEqual([]);
    expect(await stagedKeys(transId)).toEqual([null]);
  });

  it('left by a settled item whose deletion failed is deleted by the sweeper', async () => {
    const app = await createApp('staged-sweeper');
    const { transId, key } = await stagedItem(app, 'left-over');
    await (await catalogOf(app)).prepare("UPDATE insert_items SET state = 'done' WHERE trans_id = ?").bind(transId).run();
    expect(await stagedObjects(app)).toEqual([key]);

    await runSweeper();
    expect(await stagedObjects(app)).toEqual([]);
    expect(await stagedKeys(transId)).toEqual([null]);
  });
});
