/** GET /health's `embedders`: each loaded embedder's id, dimensions and whether it reads text, the default first. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { startServer, type RunningServer } from './harness.ts';
import { writeClip } from './tiny-models.ts';

let root: string;
let server: RunningServer;
before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'health-'));
  const clip = writeClip(path.join(root, 'clip-tiny'));
  const vision = writeClip(path.join(root, 'clip-vision-only'), { text: false });
  server = await startServer({ INFERENCE_EMBED_MODELS: `${clip},mobilenet-v2,${vision}`, INFERENCE_DETECTOR: 'none', INFERENCE_POSE: 'none' });
});
after(() => {
  server?.stop();
  rmSync(root, { recursive: true, force: true });
});

test('/health lists every loaded embedder with its dimensions and whether it reads text, in INFERENCE_EMBED_MODELS order', async () => {
  const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { embed_models: string[]; embedders: { id: string; dim: number; text: boolean }[] };
  assert.equal(health.embed_models.length, 3);
  assert.match(health.embed_models[0]!, /^clip-tiny@sha256-[0-9a-f]{8}\/vision_model\/image_embeds$/);
  assert.match(health.embed_models[2]!, /^clip-vision-only@sha256-[0-9a-f]{8}\/vision_model\/image_embeds$/);
  assert.deepEqual(health.embedders, [
    { id: health.embed_models[0], dim: 3, text: true },
    { id: MOBILENET_V2_EMBEDDER.modelId, dim: 448, text: false },
    { id: health.embed_models[2], dim: 3, text: false },
  ]);
});
