/**
 * The model set from the environment (INFERENCE_DETECTOR, INFERENCE_MAX_BATCH)
 * and batching under concurrent requests.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MOVENET_MODEL_ID } from '../src/models/pose/movenet.ts';
import { cosine, IMAGES_DIR, runUntilExit, startServer, type ErrorBody, type RunningServer } from './harness.ts';

const image = (file: string) => readFile(path.join(IMAGES_DIR, file));

describe('INFERENCE_DETECTOR=none', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_DETECTOR: 'none' });
  });
  after(() => server.stop());

  test('detect needs external detections, which it still finishes', async () => {
    const plant = await image('opencv-doc_plant.jpg');
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

  test('concurrent requests get the same vectors as one at a time', async () => {
    const files = ['skimage_astronaut.jpg', 'skimage_chelsea.jpg', 'opencv-doc_plant.jpg', 'skimage_coffee.jpg', 'animals_birds_hen.png', 'opencv-doc_aloeL.jpg'];
    const bytes = await Promise.all(files.map(image));
    const alone: number[][] = [];
    for (const file of bytes) alone.push((await server.predict(file, 'embed')).body.embed.vector);
    const together = await Promise.all(bytes.map((file) => server.predict(file, 'embed,detect')));
    together.forEach(({ status, body }, i) => {
      assert.equal(status, 200);
      assert.ok(cosine(body.embed.vector, alone[i]!) > 0.9999, files[i]);
    });
  });
});

describe('a bad model set stops the service before it listens', () => {
  for (const [name, value, message] of [
    ['INFERENCE_DETECTOR', 'yolo', /INFERENCE_DETECTOR must be one of centernet, none, got "yolo"/],
    ['INFERENCE_POSE', 'openpose', /INFERENCE_POSE must be one of movenet, none, got "openpose"/],
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
