/**
 * Parity of the Hugging Face layout's path with the service's own: the bundled MobileNetV2 graph, written out as a
 * MobileNetV2 export (tiny-models.ts writeMobileNetV2) and loaded by folder, gives the vector the graph gives when
 * run directly on the same preprocessed input (the built-in embedder's whole view: no centre or mirrored views).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { decodeImage } from '../src/image/decode.ts';
import { resizeRgb } from '../src/image/resize.ts';
import { loadHfEmbedder } from '../src/models/embed/hf/hf-embedder.ts';
import { MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, mobileNetV2Input } from '../src/models/embed/mobilenet-v2.ts';
import { averagePool, l2Normalize } from '../src/models/embed/vector.ts';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { onnxModelFile } from '../src/runtime/onnx/model-files.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import { cosine, IMAGES_DIR } from './harness.ts';
import { writeMobileNetV2 } from './tiny-models.ts';

let runtime: Runtime;
let root: string;
before(async () => {
  runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  root = mkdtempSync(path.join(tmpdir(), 'hf-parity-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

test('MobileNetV2 as a folder gives the vector of its graph run directly (cosine >= 0.999), pooled or averaged', async () => {
  const node = MOBILENET_V2_NODES.lastBottleneck;
  const folder = writeMobileNetV2(path.join(root, 'mobilenet_v2_1.4_224'), onnxModelFile(MOBILENET_V2_SOURCE), node);
  const pooled = await loadHfEmbedder(runtime, folderModelFiles(folder), { file: 'fp32' });
  const averaged = await loadHfEmbedder(runtime, folderModelFiles(folder), { file: 'fp32', pooling: 'mean' });
  assert.match(pooled.modelId, /^mobilenet_v2_1\.4_224@sha256-[0-9a-f]{8}\/model\/pooler_output$/);
  assert.match(averaged.modelId, /\/model\/last_hidden_state-mean$/);
  assert.equal(pooled.dim, 448);
  const direct = await runtime.load(MOBILENET_V2_SOURCE);
  for (const file of ['skimage_chelsea.jpg', 'opencv-doc_plant.jpg', 'animals_mammals_cats_tiger.png']) {
    const { pixels } = await decodeImage(await readFile(path.join(IMAGES_DIR, file)));
    const input = mobileNetV2Input(await resizeRgb(pixels, 224, 224, 'fill'));
    const expected = Array.from(l2Normalize(averagePool((await direct.run(input, [node])).get(node)!)));
    const viaPooled = cosine(Array.from(await pooled.embed(pixels)), expected);
    const viaMean = cosine(Array.from(await averaged.embed(pixels)), expected);
    assert.ok(viaPooled >= 0.999 && viaMean >= 0.999, `${file}: ${viaPooled}, ${viaMean}`);
  }
});
