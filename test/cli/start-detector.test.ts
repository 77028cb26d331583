import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { startFakeHub, REPO, type FakeHub } from '../../inference/test/hub-server.ts';
import { writeClip } from '../../inference/test/tiny-models.ts';
import { writeOwlVit } from '../../inference/test/tiny-owl.ts';
import { folderModelFiles } from '../../inference/src/models/hub/model-files.ts';
import { adminRequest, type AdminConfig } from '../../scripts/lib/admin-client.ts';
import { waitForInsert } from '../../scripts/lib/api-client.ts';
import { startLocalStack, type LocalStack } from '../../scripts/lib/local-stack.ts';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { stackLogOf } from '../support/test-log.ts';
import { freePort } from '@edge-image-search/devtools/free-port';

/**
 * An open-vocabulary detector from the hub (issue 43's "Done when"): INFERENCE_DETECTOR=hf:<a tiny OWL-ViT> served by a
 * stand-in hub (HF_ENDPOINT), a tiny colour CLIP as the embedder, and an application whose own type Ball is found by
 * the prompt "red": a photo with a red square gets a Ball boxed on the square, its colour named red, and the type
 * lists name Ball with its attributes_list.
 */

const STATE_DIR = path.join(ROOT, '.wrangler/start-detector-test-state');
const ADMIN_TOKEN = 'start-detector-test-admin-token';
const BALL = { type: 'Ball', prompts: ['red'], attributes_list: { color: ['red', 'green', 'blue', 'yellow'] } };

let root: string;
let hub: FakeHub;
let stack: LocalStack;
let admin: AdminConfig;

/** 200x160, white, cut into a 4x4 grid of 50x40 cells (the tiny OWL-ViT's patches): the cell at column 1, row 2 red. */
const RED_SQUARE = [50, 80, 100, 120];
async function photo(): Promise<Buffer> {
  const [width, height] = [200, 160];
  const data = Buffer.alloc(width * height * 3, 255);
  for (let y = RED_SQUARE[1]!; y < RED_SQUARE[3]!; y++) for (let x = RED_SQUARE[0]!; x < RED_SQUARE[2]!; x++) data.set([255, 0, 0], (y * width + x) * 3);
  return sharp(data, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

before(
  async () => {
    root = mkdtempSync(path.join(tmpdir(), 'start-detector-'));
    rmSync(STATE_DIR, { recursive: true, force: true });
    const owl = writeOwlVit(path.join(root, 'owl-tiny'));
    hub = await startFakeHub(Object.fromEntries(folderModelFiles(owl).names.map((name) => [name, readFileSync(path.join(owl, ...name.split('/')))])));
    // What the inference service the stack starts reads from its environment.
    Object.assign(process.env, { HF_ENDPOINT: hub.endpoint, HF_HUB_CACHE: path.join(root, 'cache'), INFERENCE_DETECTOR: `hf:${REPO}`, INFERENCE_POSE: 'none' });
    const clip = writeClip(path.join(root, 'clip-tiny'));
    const [port, inferencePort] = [await freePort(), await freePort()];
    stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR, embedModels: clip, log: stackLogOf('cli-start-detector') });
    admin = { baseUrl: stack.baseUrl, token: ADMIN_TOKEN };
  },
  { timeout: 180_000 },
);

after(async () => {
  stack?.stop();
  await hub?.close();
  rmSync(root, { recursive: true, force: true });
});

test('an application whose type Ball is "red" finds the red square as a Ball, coloured red', { timeout: 90_000 }, async () => {
  const created = await adminRequest<{ app_id: string; access_key: string; secret_key: string }>(admin, 'POST', '/admin/apps', { name: 'balls' });
  const { app_id, access_key, secret_key } = created.body;
  const typesSet = await adminRequest(admin, 'PUT', `/admin/apps/${app_id}/product-types`, { types: [BALL] });
  assert.equal(typesSet.status, 200, JSON.stringify(typesSet.body));
  const auth = { authorization: `Basic ${Buffer.from(`${access_key}:${secret_key}`).toString('base64')}` };

  // A collection to search: the photo itself, sent as a file.
  const insert = new FormData();
  insert.set('im_name[0]', 'ball');
  insert.set('image[0]', new Blob([await photo()]), 'ball.png');
  const { trans_id } = (await (await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body: insert })).json()) as { trans_id: number };
  assert.equal((await waitForInsert(stack.baseUrl, auth, trans_id, { pollMs: 200, timeoutMs: 45_000 })).success_count, 1);

  const search = new FormData();
  search.set('image', new Blob([await photo()]), 'photo.png');
  const uploaded = (await (await fetch(`${stack.baseUrl}/uploadsearch`, { method: 'POST', headers: auth, body: search })).json()) as {
    status: string;
    product_types: { type: string; box: number[]; attributes: Record<string, string[]> }[];
    product_types_list: unknown[];
    im_id: string;
  };
  assert.equal(uploaded.status, 'OK', JSON.stringify(uploaded));
  assert.deepEqual(uploaded.product_types_list, [{ type: 'Ball', attributes_list: BALL.attributes_list }]);
  const [ball] = uploaded.product_types;
  assert.equal(ball?.type, 'Ball');
  assert.deepEqual(ball.box, RED_SQUARE);
  assert.deepEqual(ball.attributes, { color: ['red'] });

  const discovered = (await (await fetch(`${stack.baseUrl}/discoversearch?im_id=${uploaded.im_id}`, { headers: auth })).json()) as { object_types_list: unknown[]; objects: { type: string }[] };
  assert.deepEqual(discovered.object_types_list, [{ type: 'Ball', attributes_list: BALL.attributes_list }]);
  assert.deepEqual(discovered.objects.map(({ type }) => type), ['Ball']);
});
