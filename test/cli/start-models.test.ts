import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { writeClip } from '../../inference/test/tiny-models.ts';
import { adminRequest, type AdminConfig } from '../../scripts/lib/admin-client.ts';
import { insertForm, waitForInsert } from '../../scripts/lib/api-client.ts';
import { startLocalStack, type LocalStack } from '../../scripts/lib/local-stack.ts';
import { stackLogOf } from '../support/test-log.ts';
import { configuredEmbedModels, embedModelsFor, indexNamesOf } from '../../scripts/lib/served-models.ts';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';

/**
 * INFERENCE_EMBED_MODELS as the one setting to choose models by: the local stack on a tiny CLIP folder and
 * mobilenet-v2 gives the Worker EMBED_MODELS and EMBED_MODEL from what the service loaded, new applications get the
 * first, and `setup:vectorize --from-inference` names the same model's Vectorize indexes.
 */

const STATE_DIR = path.join(ROOT, '.wrangler/start-models-test-state');
const ADMIN_TOKEN = 'start-models-test-admin-token';
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const MOBILENET_V2 = 'mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg448-whole+centre70-mirrored-v2';

let root: string;
let stack: LocalStack;
let images: Server;
let imagesUrl: string;
let admin: AdminConfig;

before(
  async () => {
    root = mkdtempSync(path.join(tmpdir(), 'start-models-'));
    rmSync(STATE_DIR, { recursive: true, force: true });
    const clip = writeClip(path.join(root, 'clip-tiny'));
    const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
    images = await startFixtureServer(imagesPort);
    imagesUrl = `http://127.0.0.1:${imagesPort}/images`;
    stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR, embedModels: `${clip},mobilenet-v2`, log: stackLogOf('cli-start-models') });
    admin = { baseUrl: stack.baseUrl, token: ADMIN_TOKEN };
  },
  { timeout: 120_000 },
);

after(() => {
  stack?.stop();
  images?.closeAllConnections();
  images?.close();
  rmSync(root, { recursive: true, force: true });
});

const clipId = () => stack.served[0]!.id;

test("the Worker's EMBED_MODELS and EMBED_MODEL follow from what the service loaded", () => {
  assert.match(clipId(), /^clip-tiny@sha256-[0-9a-f]{8}\/vision_model\/image_embeds$/);
  assert.deepEqual(stack.served.slice(1), [{ id: MOBILENET_V2, dim: 448, text: false }]);
  assert.deepEqual(stack.served[0], { id: clipId(), dim: 3, text: true });
  assert.equal(stack.defaultEmbedModel, clipId());
  const configured = configuredEmbedModels().models;
  const fused = [...configured.keys()].find((id) => id !== MOBILENET_V2)!;
  // The new model's indexes are named from its id; wrangler.toml's entries are kept, the one not loaded included.
  assert.deepEqual(Object.entries(stack.embedModels), [
    [clipId(), { dimensions: 3, ...indexNamesOf(clipId()) }],
    [MOBILENET_V2, configured.get(MOBILENET_V2)],
    [fused, configured.get(fused)],
  ]);
});

test("a new application gets the first model, and its images are searchable in that model's own indexes", { timeout: 60_000 }, async () => {
  const created = await adminRequest<{ app_id: string; access_key: string; secret_key: string }>(admin, 'POST', '/admin/apps', { name: 'clip-app' });
  assert.equal(created.status, 201);
  const { app_id, access_key, secret_key } = created.body;
  assert.equal((await adminRequest<{ embed_model: string }>(admin, 'GET', `/admin/apps/${app_id}`)).body.embed_model, clipId());
  const auth = { authorization: `Basic ${Buffer.from(`${access_key}:${secret_key}`).toString('base64')}` };
  const inserted = await fetch(`${stack.baseUrl}/insert`, {
    method: 'POST',
    headers: auth,
    body: insertForm(['animals_birds_hen.png', 'skimage_chelsea.jpg'].map((file) => ({ name: file.split('.')[0]!, url: `${imagesUrl}/${file}` }))),
  });
  const { trans_id } = (await inserted.json()) as { trans_id: number };
  const status = await waitForInsert(stack.baseUrl, auth, trans_id, { pollMs: 200, timeoutMs: 45_000 });
  assert.equal(status.success_count, 2, JSON.stringify(status));
  const search = await fetch(`${stack.baseUrl}/search?im_name=animals_birds_hen&score=true`, { headers: auth });
  const body = (await search.json()) as { status: string; result: { im_name: string }[] };
  assert.equal(body.status, 'OK', JSON.stringify(body));
  assert.deepEqual(body.result.map((hit) => hit.im_name), ['skimage_chelsea']);
});

test('index names from a model id: short, valid for Vectorize, stable, and apart for ids alike', () => {
  const hub = 'hf:Xenova/clip-vit-base-patch32@3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268/vision_model/image_embeds';
  const names = indexNamesOf(hub);
  assert.deepEqual(names, indexNamesOf(hub));
  assert.match(names.images, /^images-clip-vit-base-p-[0-9a-f]{8}$/);
  assert.equal(names.objects, names.images.replace(/^images/, 'objects'));
  const quantized = indexNamesOf(hub.replace('vision_model/', 'vision_model_quantized/'));
  assert.notEqual(quantized.images, names.images);
  assert.deepEqual(names.tuned, { images: `${names.images}-tuned`, objects: `${names.objects}-tuned` });
  for (const id of [hub, MOBILENET_V2, clipId(), 'X', '--', `${'Ünïcode '.repeat(30)}@x`]) {
    const { images, objects, tuned } = indexNamesOf(id);
    for (const name of [images, objects, tuned.images, tuned.objects]) {
      assert.match(name, /^[a-z][a-z0-9-]*[a-z0-9]$/, name);
      // 38 with the environment's prefix (`image-search-`, 13) is well within Vectorize's 64 bytes.
      assert.ok(name.length <= 38, name);
    }
  }
});

test('a model wrangler.toml lists is refused when the service makes vectors of other dimensions', () => {
  const configured = configuredEmbedModels().models;
  assert.throws(() => embedModelsFor([{ id: MOBILENET_V2, dim: 512, text: false }], configured), /makes 512-d vectors, EMBED_MODELS says 448/);
});

test("setup:vectorize --from-inference creates the new model's indexes and prints the settings that bind them", () => {
  const run = spawnSync(NODE, [path.join(ROOT, 'scripts/setup-vectorize.ts'), '--env', 'production', '--from-inference', stack.inferenceUrl, '--dry-run'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const { images, objects, tuned } = indexNamesOf(clipId());
  const commands = run.stdout.split('\n').filter((line) => line.startsWith('wrangler '));
  // wrangler.toml's production environment filters on no field: the object indexes get the product type alone.
  assert.deepEqual(commands, [
    `wrangler vectorize create image-search-${images} --dimensions 3 --metric cosine`,
    `wrangler vectorize create image-search-${objects} --dimensions 3 --metric cosine`,
    `wrangler vectorize create-metadata-index image-search-${objects} --property-name type --type string`,
    `wrangler vectorize create image-search-${tuned.images} --dimensions 3 --metric cosine`,
    `wrangler vectorize create image-search-${tuned.objects} --dimensions 3 --metric cosine`,
    `wrangler vectorize create-metadata-index image-search-${tuned.objects} --property-name type --type string`,
  ]);
  const binding = (name: string) => `VECTORIZE_${name.toUpperCase().replaceAll('-', '_')}`;
  const embedModels = JSON.parse(/EMBED_MODELS = '''(.*?)'''/s.exec(run.stdout)![1]!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(embedModels).slice(0, 2), [clipId(), MOBILENET_V2]);
  assert.deepEqual(embedModels[clipId()], { dimensions: 3, images: binding(images), objects: binding(objects), tuned: { images: binding(tuned.images), objects: binding(tuned.objects) } });
  assert.deepEqual(embedModels[MOBILENET_V2], {
    dimensions: 448,
    images: 'VECTORIZE_IMAGES',
    objects: 'VECTORIZE_OBJECTS',
    tuned: { images: 'VECTORIZE_IMAGES_TUNED', objects: 'VECTORIZE_OBJECTS_TUNED' },
  });
  assert.match(run.stdout, new RegExp(`^EMBED_MODEL = "${clipId()}"$`, 'm'));
  assert.ok(run.stdout.includes(`[[env.production.vectorize]]\nbinding = "${binding(images)}"\nindex_name = "image-search-${images}"`));
  assert.ok(run.stdout.includes(`[[env.production.vectorize]]\nbinding = "${binding(objects)}"\nindex_name = "image-search-${objects}"`));
  assert.ok(run.stdout.includes(`[[env.production.vectorize]]\nbinding = "${binding(tuned.images)}"\nindex_name = "image-search-${tuned.images}"`));
});
