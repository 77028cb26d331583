/** The shared secret: with INFERENCE_SECRET set, /predict answers only the bearer of it; /health stays open. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { IMAGES_DIR, launchServer, runUntilExit, waitUntilReady, type RunningServer } from './harness.ts';

let server: RunningServer;
let baseUrl: string;

before(async () => {
  server = await launchServer({ INFERENCE_SECRET: 'shared-secret' });
  ({ baseUrl } = server);
  await waitUntilReady(server);
});

after(() => {
  server.stop();
});

const predict = async (authorization?: string): Promise<number> => {
  const form = new FormData();
  form.set('tasks', 'embed');
  form.set('image', new Blob([await readFile(path.join(IMAGES_DIR, 'skimage_coffee.jpg'))]), 'upload');
  const response = await fetch(`${baseUrl}/predict`, { method: 'POST', body: form, ...(authorization ? { headers: { authorization } } : {}) });
  await response.arrayBuffer();
  return response.status;
};

test('refuses /predict without the secret or with a wrong one', async () => {
  assert.equal(await predict(), 401);
  assert.equal(await predict('Bearer wrong'), 401);
});

test('answers the bearer of the secret', async () => {
  assert.equal(await predict('Bearer shared-secret'), 200);
});

test('keeps /health open for load balancers', async () => {
  assert.equal((await fetch(`${baseUrl}/health`)).status, 200);
});

test('refuses to start without a secret on any but a loopback host', async () => {
  const { code, output } = await runUntilExit({ INFERENCE_HOST: '0.0.0.0', INFERENCE_SECRET: '' });
  assert.notEqual(code, 0);
  assert.match(output, /INFERENCE_SECRET must be set when the service listens on 0\.0\.0\.0/);
});

test('answers a prediction that arrives while the models load with 503 loading, the secret checked first', async () => {
  // Sent the moment the port is bound: the models take a few hundred milliseconds more.
  const { baseUrl: early, stop } = await launchServer({ INFERENCE_SECRET: 'shared-secret' });
  try {
    const form = new FormData();
    form.set('tasks', 'embed');
    form.set('image', new Blob([await readFile(path.join(IMAGES_DIR, 'skimage_coffee.jpg'))]), 'upload');
    const response = await fetch(`${early}/predict`, { method: 'POST', body: form, headers: { authorization: 'Bearer shared-secret' } });
    assert.equal(response.status, 503);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'loading');
  } finally {
    stop();
  }
});
