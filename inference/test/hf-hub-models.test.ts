/**
 * `hf:` entries of INFERENCE_EMBED_MODELS end to end: the service downloads a model in the Hugging Face layout from
 * the hub HF_ENDPOINT names (a stand-in on 127.0.0.1 serving a tiny CLIP folder written here), prints its progress,
 * caches it, serves it again with the hub gone, and stops before it listens when the hub cannot give it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { cosine, png, runUntilExit, startServer } from './harness.ts';
import { COMMIT, REPO, startFakeHub, type FakeHub } from './hub-server.ts';
import { channelValues, CLIP_MEAN, CLIP_STD, COLOURS, unit, writeClip } from './tiny-models.ts';

let root: string;
let files: Record<string, Buffer>;

before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'hf-hub-models-'));
  const clip = writeClip(path.join(root, 'clip'));
  files = Object.fromEntries(folderModelFiles(clip).names.map((name) => [name, readFileSync(path.join(clip, ...name.split('/')))]));
});
after(() => rmSync(root, { recursive: true, force: true }));

/** The service's settings for the hub at `endpoint` and a cache of the test's own. */
const hubEnv = (endpoint: string, cache: string, entry = `hf:${REPO}`) => ({
  INFERENCE_EMBED_MODELS: `${entry},mobilenet-v2`,
  HF_ENDPOINT: endpoint,
  HF_HUB_CACHE: cache,
  INFERENCE_DETECTOR: 'none',
  INFERENCE_POSE: 'none',
});

async function redVector(env: Record<string, string>): Promise<{ models: string[]; vector: number[]; output: string }> {
  const server = await startServer(env);
  try {
    const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { embed_models: string[] };
    const { status, body } = await server.predict(await png({ data: Buffer.alloc(40 * 30 * 3, Buffer.from(COLOURS.red)), width: 40, height: 30, channels: 3 }));
    assert.equal(status, 200);
    return { models: health.embed_models, vector: body.embed.vector, output: server.output() };
  } finally {
    server.stop();
  }
}

test('downloaded from HF_ENDPOINT with progress lines, cached, and served again with the hub stopped', async () => {
  const hub = await startFakeHub(files);
  const cache = path.join(root, 'cache-ok');
  const expectedId = `hf:${REPO}@${COMMIT}/vision_model/image_embeds`;
  const red = unit(channelValues(COLOURS.red, CLIP_MEAN, CLIP_STD));
  let first: Awaited<ReturnType<typeof redVector>>;
  try {
    first = await redVector(hubEnv(hub.endpoint, cache));
    assert.equal(first.models[0], expectedId);
    assert.ok(cosine(first.vector, red) > 0.99999);
    assert.match(first.output, new RegExp(`inference: downloaded ${REPO}@main onnx/vision_model\\.onnx`));
  } finally {
    await hub.close();
  }
  const again = await redVector(hubEnv(hub.endpoint, cache));
  assert.equal(again.models[0], expectedId);
  assert.deepEqual(again.vector, first.vector);
  assert.doesNotMatch(again.output, /inference: download/);
});

test('a hub that does not have the repository, or sends a truncated file, stops the service before it listens, with its message', async () => {
  let hub: FakeHub = await startFakeHub(files);
  try {
    const missing = await runUntilExit(hubEnv(hub.endpoint, path.join(root, 'cache-missing'), 'hf:test-owner/no-such-model'));
    assert.equal(missing.code, 1);
    assert.match(missing.output, /hf:test-owner\/no-such-model@main: .* has no such repository or revision/);
    assert.doesNotMatch(missing.output, /listening on/);
  } finally {
    await hub.close();
  }
  hub = await startFakeHub(files);
  hub.shortAnswer = 100;
  try {
    const truncated = await runUntilExit(hubEnv(hub.endpoint, path.join(root, 'cache-truncated')));
    assert.equal(truncated.code, 1);
    assert.match(truncated.output, /onnx\/vision_model\.onnx truncated: got 100 of \d+ bytes/);
    assert.doesNotMatch(truncated.output, /listening on/);
  } finally {
    await hub.close();
  }
});
