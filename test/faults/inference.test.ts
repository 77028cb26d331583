import { env } from 'cloudflare:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

/** The fault proxy's modes (test/support/inference-faults.ts). */
type FaultMode = 'pass' | 'hang' | 'garbage' | 'busy';
import { embedModels } from '../../src/storage/embed-models';
import { adminHeaders, basicAuth, catalogOf, call, createApp, fixtureUrl, imageBytes, insert, search, waitForTransaction, type Credentials } from '../worker/helpers';

/**
 * The Worker against an inference service that fails for real (test/support/inference-faults.ts): killed, hanging,
 * answering garbage, busy. Inserts are retried with backoff and end searchable or failed, each counted once; a search
 * answers "busy" (HTTP 200, `status: 'fail'`, `Retry-After`), never a system error.
 */

const BUSY = 'System busy, please try again later.';
const SYSTEM_ERROR = 'A system error is reported and we are fixing it right now.';
const IMAGES = ['skimage_chelsea.jpg', 'skimage_astronaut.jpg', 'opencv-doc_plant.jpg', 'skimage_coffee.jpg'];

async function fault(action: `mode/${FaultMode}` | 'inference/stop' | 'inference/start'): Promise<void> {
  const response = await fetch(`${env.INFERENCE_URL}/__faults/${action}`, { method: 'POST' });
  if (!response.ok) throw new Error(`fault control ${action} answered ${response.status}`);
}

const predictions = async (): Promise<number> =>
  (await (await fetch(`${env.INFERENCE_URL}/__faults/predictions`)).json<{ predictions: number }>()).predictions;

const uploadForm = (image: Blob): FormData => {
  const form = new FormData();
  form.append('image', image, 'query-image');
  return form;
};

async function insertImages(app: Credentials, files: string[]): Promise<number> {
  const response = await insert(app, files.map((file) => ({ im_name: file, im_url: fixtureUrl(`/images/${file}`) })));
  const body = await response.json<{ status: string; trans_id: number }>();
  expect(body.status, JSON.stringify(body)).toBe('OK');
  return body.trans_id;
}

async function processedPercent(app: Credentials, transId: number): Promise<number> {
  const response = await call(`/insert/status/${transId}`, { headers: basicAuth(app) });
  return (await response.json<{ result: { processed_percent: number }[] }>()).result[0]!.processed_percent;
}

/** Rows the insert left in D1: each accepted image at most once, whatever the redeliveries. */
const imageRows = async (app: Credentials): Promise<number> =>
  (await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM images WHERE app_id = ?').bind(app.app_id).first<{ n: number }>())!.n;

afterEach(async () => {
  await fault('mode/pass');
  await fault('inference/start');
});

describe('inserts', () => {
  it('are retried with backoff while the inference service is down, and all become searchable once it is back', async () => {
    const app = await createApp('down-then-up');
    await fault('inference/stop');
    const before = await predictions();
    const transId = await insertImages(app, IMAGES.slice(0, 2));
    await sleep(3_000);
    expect(await predictions()).toBeGreaterThan(before); // tried, and failed
    expect(await processedPercent(app, transId)).toBe(0); // waiting for a retry, not failed
    await fault('inference/start');

    const status = await waitForTransaction(app, transId, 60_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 2, fail_count: 0 });
    expect(await imageRows(app)).toBe(2);
    const { body } = await search(app, `im_name=${IMAGES[0]}`);
    expect(body.status).toBe('OK');
  });

  it('go to the dead-letter queue once the retry budget is spent, fail with the system error, and the transaction reaches 100', async () => {
    const app = await createApp('down-for-good');
    await fault('inference/stop');
    const before = await predictions();
    const transId = await insertImages(app, IMAGES.slice(0, 1));

    const status = await waitForTransaction(app, transId, 90_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 0, fail_count: 1 });
    expect(status.error_list).toEqual([{ im_name: IMAGES[0], error_code: 500, error_message: SYSTEM_ERROR }]);
    expect(await imageRows(app)).toBe(0);
    // 5 deliveries (max_retries = 4 in wrangler.toml), each calling inference once: an insert is retried by its queue.
    expect((await predictions()) - before).toBe(5);
  });

  it('wait, never fail, while the service refuses them as busy: more refusals than deliveries allow, then done', async () => {
    const app = await createApp('busy');
    await fault('mode/busy');
    const before = await predictions();
    const transId = await insertImages(app, IMAGES.slice(0, 1));
    // Refusals back off from the service's Retry-After of 1 s: 1, 2, 4, 8 s between the first six.
    while ((await predictions()) - before < 6) await sleep(250);
    expect(await processedPercent(app, transId)).toBe(0);
    await fault('mode/pass');

    const status = await waitForTransaction(app, transId, 60_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
  }, 120_000);

  it('are retried, not failed as bad images, while the service answers garbage', async () => {
    const app = await createApp('garbage');
    await fault('mode/garbage');
    const before = await predictions();
    const transId = await insertImages(app, IMAGES.slice(0, 1));
    await sleep(3_000);
    expect(await predictions()).toBeGreaterThan(before);
    await fault('mode/pass');

    const status = await waitForTransaction(app, transId, 60_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 0 });
  });

  it('survive the service dying in the middle of a batch: every image is processed exactly once', async () => {
    const app = await createApp('killed-mid-batch');
    const transId = await insertImages(app, IMAGES);
    // Killed as soon as the consumer is at work, with predictions in flight.
    const started = await predictions();
    while ((await predictions()) === started) await sleep(20);
    await fault('inference/stop');
    await sleep(1_500);
    await fault('inference/start');

    const status = await waitForTransaction(app, transId, 60_000);
    expect(status).toMatchObject({ processed_percent: 100, success_count: IMAGES.length, fail_count: 0, total: IMAGES.length });
    expect(await imageRows(app)).toBe(IMAGES.length);
  });
});

describe('upload searches', () => {
  let app: Credentials;
  beforeAll(async () => {
    app = await createApp('uploads');
    await waitForTransaction(app, await insertImages(app, IMAGES.slice(1, 2)));
  });

  it.each([
    ['hangs', 'mode/hang'],
    ['answers garbage', 'mode/garbage'],
    ['is busy', 'mode/busy'],
    ['is down', 'inference/stop'],
  ] as const)('answer "busy" with Retry-After when the inference service %s', async (_, action) => {
    const image = await imageBytes(`/images/${IMAGES[0]}`);
    await fault(action);
    const response = await call('/uploadsearch', { method: 'POST', headers: basicAuth(app), body: uploadForm(image) });
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(body).toMatchObject({ status: 'fail', method: 'uploadsearch', error: [BUSY], total: 0, result: [] });

    await fault('mode/pass');
    await fault('inference/start');
    const again = await call('/uploadsearch', { method: 'POST', headers: basicAuth(app), body: uploadForm(image) });
    expect(again.headers.get('retry-after')).toBeNull();
    expect(await again.json()).toMatchObject({ status: 'OK', method: 'uploadsearch', error: [] });
  });
});

describe('reindex', () => {
  it('goes on once the inference service is back after dying mid-way, and ends with every image in the new model', async () => {
    const app = await createApp('reindex-down-then-up');
    expect((await waitForTransaction(app, await insertImages(app, IMAGES), 60_000)).success_count).toBe(IMAGES.length);
    const [, newModel] = [...embedModels(env).keys()];
    const ask = () => call(`/admin/apps/${app.app_id}/reindex`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ embed_model: newModel }) });
    // The model is checked with the service before a reindex begins: with the service down, nothing begins.
    await fault('inference/stop');
    expect((await ask()).status).toBe(503);
    await fault('inference/start');
    expect((await ask()).status).toBe(202);
    // Killed as soon as the reindex is at work, with its first step's predictions in flight.
    const before = await predictions();
    while ((await predictions()) === before) await sleep(20);
    await fault('inference/stop');
    await sleep(1_500);
    await fault('inference/start');

    const deadline = Date.now() + 60_000;
    let reindex: { state: string; images_done: number; images_total: number } | undefined;
    while (Date.now() < deadline && reindex?.state !== 'done') {
      await sleep(250);
      const response = await call(`/admin/apps/${app.app_id}/reindex`, { headers: adminHeaders });
      reindex = (await response.json<{ reindex: typeof reindex }>()).reindex;
    }
    expect(reindex).toMatchObject({ state: 'done', images_done: IMAGES.length, images_total: IMAGES.length });
    const { body } = await search(app, `im_name=${IMAGES[0]}`);
    expect(body.status).toBe('OK');
    expect(body.result.length).toBeGreaterThan(0);
  });
});
