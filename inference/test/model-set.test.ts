/**
 * The model set from the environment (INFERENCE_EMBED_MODELS, INFERENCE_DETECTOR,
 * INFERENCE_MAX_BATCH) and batching under concurrent requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FUSED_EMBEDDER, MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { MOVENET_MODEL_ID } from '../src/models/pose/movenet.ts';
import { cosine, imageBytes, runUntilExit, startServer, type ErrorBody, type RunningServer } from './harness.ts';

describe('INFERENCE_EMBED_MODELS=fused', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_EMBED_MODELS: 'fused' });
  });
  after(() => server.stop());

  test('loads the fused embedder alone, the default for every request', async () => {
    const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { embed_models: string[] };
    assert.deepEqual(health.embed_models, [FUSED_EMBEDDER.modelId]);
    const plant = await imageBytes('opencv-doc_plant.jpg');
    const { status, body } = await server.predict(plant, 'embed,detect');
    assert.equal(status, 200);
    assert.deepEqual([body.embed.model, body.embed.dim], [FUSED_EMBEDDER.modelId, 376]);
    assert.ok(body.detect.objects.length > 0);
    for (const object of body.detect.objects) assert.equal(object.embedding.length, 376);
    const today = await server.predict(plant, 'embed', { embed_model: MOBILENET_V2_EMBEDDER.modelId });
    assert.equal(today.status, 400);
    assert.equal((today.body as ErrorBody).error.code, 'unknown_embed_model');
  });
});

describe('INFERENCE_DETECTOR=none', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_DETECTOR: 'none' });
  });
  after(() => server.stop());

  test('detect needs external detections, which it still finishes', async () => {
    const plant = await imageBytes('opencv-doc_plant.jpg');
    const alone = await server.predict(plant, 'detect');
    assert.equal(alone.status, 400);
    assert.equal((alone.body as ErrorBody).error.code, 'detections_required');

    const form = new FormData();
    form.set('image', new Blob([plant]), 'upload');
    form.set('tasks', 'detect');
    form.set('detections', JSON.stringify({ model: 'detr', objects: [{ label: 'vase', score: 0.9, box: [192, 199, 370, 331] }] }));
    const response = await fetch(`${server.baseUrl}/predict`, { method: 'POST', body: form });
    const body = (await response.json()) as { detect: { model: string; objects: { type: string; box: number[] }[] } };
    assert.equal(response.status, 200);
    // The detections' model, with the pose model that looks at their people.
    assert.equal(body.detect.model, `detr+${MOVENET_MODEL_ID}`);
    assert.deepEqual(body.detect.objects.map((object) => [object.type, object.box]), [['Vase and Pot', [192, 199, 370, 331]]]);
    assert.equal((await server.predict(plant, 'embed')).status, 200);
  });
});

describe('batching', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_MAX_BATCH: '4' });
  });
  after(() => server.stop());

  test('concurrent requests, to both embedders, get the same vectors as one at a time', async () => {
    const files = ['skimage_astronaut.jpg', 'skimage_chelsea.jpg', 'opencv-doc_plant.jpg', 'skimage_coffee.jpg', 'animals_birds_hen.png', 'opencv-doc_aloeL.jpg'];
    const bytes = await Promise.all(files.map(imageBytes));
    // Each image to each embedder: the two embedders' sessions batch their own rows side by side.
    const requests = bytes.flatMap((file) => [MOBILENET_V2_EMBEDDER, FUSED_EMBEDDER].map(({ modelId }) => ({ file, modelId })));
    const alone: number[][] = [];
    for (const { file, modelId } of requests) alone.push((await server.predict(file, 'embed', { embed_model: modelId })).body.embed.vector);
    const together = await Promise.all(requests.map(({ file, modelId }) => server.predict(file, 'embed,detect', { embed_model: modelId })));
    together.forEach(({ status, body }, i) => {
      assert.equal(status, 200);
      assert.equal(body.embed.model, requests[i]!.modelId);
      assert.ok(cosine(body.embed.vector, alone[i]!) > 0.9999, `${files[i >> 1]}, ${requests[i]!.modelId}`);
    });
  });
});

describe('a bad model set stops the service before it listens', () => {
  for (const [name, value, message] of [
    ['INFERENCE_EMBED_MODELS', 'fused,clip', /INFERENCE_EMBED_MODELS must list one or more of mobilenet-v2, fused, comma-separated, each once, got "fused,clip"/],
    ['INFERENCE_EMBED_MODELS', 'fused,fused', /INFERENCE_EMBED_MODELS must list one or more of mobilenet-v2, fused, comma-separated, each once, got "fused,fused"/],
    ['INFERENCE_DETECTOR', 'yolo', /INFERENCE_DETECTOR must be one of centernet, none, a model folder or hf:owner\/repo\[@revision\]: "yolo" is neither, model folder \S+\/yolo does not exist/],
    ['INFERENCE_POSE', 'openpose', /INFERENCE_POSE must be one of movenet, none, a model folder or hf:owner\/repo\[@revision\]: "openpose" is neither, model folder \S+\/openpose does not exist/],
    ['INFERENCE_MAX_BATCH', '0', /INFERENCE_MAX_BATCH must be an integer from 1 to 256, got "0"/],
  ] as const) {
    test(`${name}=${value}`, async () => {
      const { code, output } = await runUntilExit({ [name]: value });
      assert.equal(code, 1);
      assert.doesNotMatch(output, /listening on/);
      assert.match(output, message);
    });
  }
});
