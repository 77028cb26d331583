/**
 * The service with INFERENCE_DETECTOR naming a detector in the Hugging Face layout (a tiny DETR of tiny-detr.ts whose
 * classes are the colours of blocks): `/health` describes it, `detect` reports its label map's types with each
 * object's colour attribute, a request's vocabulary narrows the types and names the attributes' values, and a
 * detector that cannot be had stops the service before it listens.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { COLOR_NAMES } from '@edge-image-search/contract/attributes';
import { png, runUntilExit, startServer, type RunningServer } from './harness.ts';
import { writeTinyDetr } from './tiny-detr.ts';
import { COLOURS, writeClip } from './tiny-models.ts';

let root: string;
let server: RunningServer;
let folder: string;
let labels: string;

/** 240x160, black: a red block on the top-left quarter, a blue one on the bottom-right quarter. */
function blocks(): Promise<Buffer> {
  const [width, height] = [240, 160];
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (x < width / 2 && y < height / 2) data.set(COLOURS.red, (y * width + x) * 3);
      if (x >= width / 2 && y >= height / 2) data.set(COLOURS.blue, (y * width + x) * 3);
    }
  }
  return png({ data, width, height, channels: 3 });
}

before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'hf-detector-service-'));
  folder = writeTinyDetr(path.join(root, 'tiny-detr'), 'detr');
  labels = path.join(root, 'labels.json');
  writeFileSync(labels, JSON.stringify({ red: 'Bag', green: 'Dress', blue: 'Shoe' }));
  server = await startServer({ INFERENCE_DETECTOR: folder, DETECTOR_LABELS: labels, INFERENCE_EMBED_MODELS: 'mobilenet-v2' });
});
after(() => {
  server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('a detector in the Hugging Face layout', () => {
  test('/health describes it: closed vocabulary, the types of its label map', async () => {
    const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { detector: { model: string; open_vocabulary: boolean; types: string[] } };
    assert.equal(health.detector.open_vocabulary, false);
    assert.deepEqual(health.detector.types, ['Bag', 'Dress', 'Shoe']);
    assert.match(health.detector.model, /^.*tiny-detr@sha256-[0-9a-f]{8}\/model$/);
  });

  test('finds the blocks as their types, boxed in the image, each named by its colour', async () => {
    const { status, body } = await server.predict(await blocks(), 'detect');
    assert.equal(status, 200);
    const found = body.detect.objects.map(({ type, box, attributes }) => ({ type, box, attributes }));
    assert.deepEqual(found.sort((a, b) => a.type.localeCompare(b.type)), [
      { type: 'Bag', box: [0, 0, 120, 80], attributes: { color: 'red' } },
      { type: 'Shoe', box: [120, 80, 240, 160], attributes: { color: 'blue' } },
    ]);
    assert.deepEqual(body.detect.types, ['Bag', 'Dress', 'Shoe']);
    for (const object of body.detect.objects) assert.ok(COLOR_NAMES.includes(object.attributes!.color as (typeof COLOR_NAMES)[number]));
  });

  test("a request's vocabulary narrows the types, and names the values an attribute may take", async () => {
    const vocabulary = { types: [{ type: 'Shoe', attributes_list: { color: ['navy', 'green'] } }, { type: 'Dress' }] };
    const { status, body } = await server.predict(await blocks(), 'detect', { vocabulary: JSON.stringify(vocabulary) });
    assert.equal(status, 200);
    assert.deepEqual(body.detect.types, ['Shoe', 'Dress']);
    // The blue block is nearer navy than green: the nearest of the values allowed.
    assert.deepEqual(body.detect.objects.map(({ type, attributes }) => ({ type, attributes })), [{ type: 'Shoe', attributes: { color: 'navy' } }]);
  });

  test('a malformed vocabulary is refused, naming where', async () => {
    const { status, body } = await server.predict(await blocks(), 'detect', { vocabulary: JSON.stringify({ types: [] }) });
    assert.equal(status, 400);
    assert.equal(body.error?.code, 'bad_vocabulary');
  });

  test('a detector folder that does not exist, or holds no detector, stops the service before it listens', async () => {
    const missing = await runUntilExit({ INFERENCE_DETECTOR: path.join(root, 'no-such-folder') });
    assert.notEqual(missing.code, 0);
    assert.match(missing.errorOutput, /INFERENCE_DETECTOR must be one of centernet, none, a model folder or hf:owner\/repo\[@revision\]/);
    const embedder = path.join(root, 'not-a-detector');
    writeTinyDetr(embedder, 'detr', { config: { model_type: 'clip' } });
    const wrong = await runUntilExit({ INFERENCE_DETECTOR: embedder });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.errorOutput, /model_type "clip" is not a detector the service runs \(supported: detr, conditional_detr, yolos, rt_detr, rt_detr_v2, owlvit, owlv2, segformer\)/);
  });
});

describe("attributes other than colour: zero-shot by an embedder that reads text", () => {
  const vocabulary = JSON.stringify({ types: [{ type: 'Bag', attributes_list: { shade: ['red', 'green', 'blue'], color: ['red', 'blue'] } }] });

  test('an embedder without a text tower leaves them out, and still names the colour', async () => {
    const { body } = await server.predict(await blocks(), 'detect', { vocabulary });
    assert.deepEqual(body.detect.objects.map(({ type, attributes }) => ({ type, attributes })), [{ type: 'Bag', attributes: { color: 'red' } }]);
  });

  test("a CLIP judges each value's prompt against the object's crop: the red block's shade is red", async () => {
    const clip = writeClip(path.join(root, 'clip-tiny'));
    const reading = await startServer({ INFERENCE_DETECTOR: folder, DETECTOR_LABELS: labels, INFERENCE_EMBED_MODELS: clip });
    try {
      const { status, body } = await reading.predict(await blocks(), 'detect', { vocabulary });
      assert.equal(status, 200);
      // The tiny CLIP's text tower reads "a photo of a red bag" as red's vector (its unknown words weigh nothing).
      assert.deepEqual(body.detect.objects.map(({ type, attributes }) => ({ type, attributes })), [{ type: 'Bag', attributes: { shade: 'red', color: 'red' } }]);
    } finally {
      reading.stop();
    }
  });
});
