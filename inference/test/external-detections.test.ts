/**
 * The detect task finishing detections made outside the service (the Worker's
 * Workers AI DETR): the same label map, score floor, suppression, clamping and
 * crop embeddings as its own detector's, and clear errors for a bad field.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MOVENET_MODEL_ID } from '../src/models/pose/movenet.ts';
import { cosine, IMAGES_DIR, startServer, type ErrorBody, type PredictBody, type RunningServer } from './harness.ts';

const DETR = '@cf/facebook/detr-resnet-50';

describe('external detections', () => {
  let server: RunningServer;
  let plant: Uint8Array; // 500x333
  before(async () => {
    server = await startServer();
    plant = await readFile(path.join(IMAGES_DIR, 'opencv-doc_plant.jpg'));
  });
  after(() => server.stop());

  async function post(fields: Record<string, string>): Promise<{ status: number; body: PredictBody }> {
    const form = new FormData();
    form.set('image', new Blob([plant]), 'upload');
    for (const [name, value] of Object.entries(fields)) form.set(name, value);
    const response = await fetch(`${server.baseUrl}/predict`, { method: 'POST', body: form });
    return { status: response.status, body: (await response.json()) as PredictBody };
  }

  const detections = (objects: unknown[]) => JSON.stringify({ model: DETR, objects });

  test('are mapped, filtered, suppressed, clamped and embedded like the own detector', async () => {
    const { status, body } = await post({
      tasks: 'detect,colors',
      detections: detections([
        { label: 'person', score: 0.99, box: [0, 0, 100, 100] }, // no product type: dropped
        { label: 'vase', score: 0.9, box: [150.4, 60.6, 380.2, 320.7] },
        { label: 'vase', score: 0.8, box: [160, 70, 385, 330] }, // same type, IoU > 0.5 with the first: suppressed
        { label: 'chair', score: 0.15, box: [10, 10, 90, 90] }, // under the score floor
        { label: 'couch', score: 0.55555, box: [-40, 200, 120, 400] }, // reaches outside: clamped
      ]),
    });
    assert.equal(status, 200);
    assert.equal(body.detect.model, `${DETR}+${MOVENET_MODEL_ID}`);
    assert.deepEqual(
      body.detect.objects.map(({ type, label, score, box }) => ({ type, label, score, box })),
      [
        { type: 'Vase and Pot', label: 'vase', score: 0.9, box: [150, 61, 380, 321] },
        { type: 'Seating', label: 'couch', score: 0.5556, box: [0, 200, 120, 333] },
      ],
    );
    const [pot] = body.detect.objects;
    // The crop embedding is the embed task's vector of the box widened by 10 % on each side.
    const widened = [150 - 23, 61 - 26, 380 + 23, 321 + 26].join(',');
    const crop = await server.predict(plant, 'embed', { box: widened });
    assert.ok(cosine(pot!.embedding, crop.body.embed.vector) > 0.999);
    // And the colours are those of the box itself.
    const colors = await server.predict(plant, 'colors', { box: pot!.box.join(',') });
    assert.deepEqual(pot!.colors, colors.body.colors.palette);
  });

  test('keep to the request box and answer in whole-image pixels', async () => {
    const { status, body } = await post({
      tasks: 'detect',
      box: '200,0,500,333',
      detections: detections([
        { label: 'vase', score: 0.9, box: [150, 60, 380, 320] }, // partly inside: clipped to the box
        { label: 'chair', score: 0.8, box: [10, 10, 150, 150] }, // outside the box: dropped
      ]),
    });
    assert.equal(status, 200);
    assert.deepEqual(body.detect.objects.map((object) => object.box), [[200, 60, 380, 320]]);
  });

  test('an empty list finds nothing', async () => {
    const { status, body } = await post({ tasks: 'detect,embed', detections: detections([]) });
    assert.equal(status, 200);
    assert.deepEqual(body.detect.objects, []);
    assert.equal(body.embed.dim, 448);
  });

  test('a bad field is a 400 naming the problem', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ tasks: 'embed', detections: detections([]) }, /needs the detect task/],
      [{ tasks: 'detect', detections: '{not json' }, /must be JSON/],
      [{ tasks: 'detect', detections: JSON.stringify({ objects: [] }) }, /"model"/],
      [{ tasks: 'detect', detections: JSON.stringify({ model: DETR, objects: {} }) }, /"objects"/],
      [{ tasks: 'detect', detections: detections([{ label: 'vase', score: 0.5, box: [1, 2, 3] }]) }, /objects\[0\]/],
      [{ tasks: 'detect', detections: detections([{ label: 'vase', score: 'high', box: [1, 2, 3, 4] }]) }, /objects\[0\]/],
      [{ tasks: 'detect', detections: detections(Array.from({ length: 1001 }, () => ({ label: 'vase', score: 1, box: [0, 0, 1, 1] }))) }, /at most 1000/],
    ];
    for (const [fields, message] of cases) {
      const { status, body } = await post(fields);
      assert.equal(status, 400, JSON.stringify(fields).slice(0, 80));
      assert.equal((body as ErrorBody).error.code, 'bad_detections');
      assert.match((body as ErrorBody).error.message, message);
    }
  });
});
