/**
 * Starts the real service (harness.ts, on a free port) and drives it
 * over HTTP with the shared test images and copies made from them with sharp.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { FUSED_EMBEDDER, MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { GARMENT_LABELS } from '../src/models/pose/garments.ts';
import { cosine, imageBytes, launchServer, norm, waitUntilReady, type ErrorBody, type RunningServer } from './harness.ts';

/** The documented embedding length of the default embedder (README.md). */
const EMBED_DIM = 448;
/** The embedders the service loads by default (INFERENCE_EMBED_MODELS), the default first. */
const EMBEDDERS = [MOBILENET_V2_EMBEDDER, FUSED_EMBEDDER];
const EMBED_MODELS = EMBEDDERS.map(({ modelId }) => modelId);

let server: RunningServer;
let baseUrl: string;
const first: { health?: { status: number; body: unknown }; ready?: { status: number; body: unknown } } = {};
const probe = async (path: string) => {
  const response = await fetch(`${baseUrl}${path}`);
  return { status: response.status, body: await response.json() };
};

before(async () => {
  server = await launchServer();
  ({ baseUrl } = server);
  [first.health, first.ready] = await Promise.all([probe('/health'), probe('/ready')]);
  await waitUntilReady(server);
});

after(() => {
  server.stop();
});

describe('GET /health and GET /ready', () => {
  test('/health answers as soon as the process listens, with the loaded embedders once they are in; /ready only then', async () => {
    // The first probes may already find the models loaded on a fast machine.
    assert.equal(first.health!.status, 200);
    if (first.ready!.status === 503) {
      assert.deepEqual(first.ready!.body, { status: 'loading' });
      assert.deepEqual(first.health!.body, { status: 'ok', models: 'loading', embed_models: [], embedders: [] });
    } else {
      assert.equal(first.ready!.status, 200);
    }
    const embedders = EMBEDDERS.map(({ modelId, dim }) => ({ id: modelId, dim, text: false }));
    const { status, body } = await probe('/health');
    const { detector, ...health } = body as { detector: { model: string } };
    assert.deepEqual({ status, body: health }, { status: 200, body: { status: 'ok', models: 'ready', embed_models: EMBED_MODELS, embedders } });
    // The bundled detector: closed vocabulary, the label map's types and the garments the pose model finds.
    assert.deepEqual(detector, {
      model: 'centernet_mobilenetv3_coco80_512-human3.3.6-letterbox-v1+movenet_singlepose_lightning_v4-human3.3.6-square-crop-v1',
      open_vocabulary: false,
      types: ['Bag', 'Bed', 'Bottom', 'Clock', 'Seating', 'Shoe', 'Table', 'Top', 'Vase and Pot'],
    });
    assert.deepEqual(await probe('/ready'), { status: 200, body: { status: 'ready' } });
  });
});

describe('POST /predict embed', () => {
  test('returns the image size and format and a unit vector of the documented length', async () => {
    const { status, body } = await server.predict(await imageBytes('skimage_astronaut.jpg'));
    assert.equal(status, 200);
    assert.deepEqual(body.image, { width: 512, height: 512, format: 'jpeg' });
    assert.equal(body.embed.dim, EMBED_DIM);
    assert.equal(body.embed.vector.length, EMBED_DIM);
    assert.match(body.embed.model, /\S/);
    assert.ok(Math.abs(norm(body.embed.vector) - 1) < 1e-5, `norm ${norm(body.embed.vector)}`);
  });

  test('gives identical vectors for the same image twice', async () => {
    const bytes = await imageBytes('opencv-doc_fruits.jpg');
    const first = await server.predict(bytes);
    const second = await server.predict(bytes);
    assert.deepEqual(first.body.embed.vector, second.body.embed.vector);
  });

  test('puts a flipped, slightly cropped copy much closer to its original than to other images', async () => {
    const original = await imageBytes('skimage_chelsea.jpg');
    const { width = 0, height = 0 } = await sharp(original).metadata();
    const copy = await sharp(original)
      .extract({ left: Math.round(width * 0.08), top: Math.round(height * 0.05), width: Math.round(width * 0.85), height: Math.round(height * 0.9) })
      .flop()
      .jpeg({ quality: 80 })
      .toBuffer();
    const [copyVector, originalVector, ...otherVectors] = await Promise.all(
      [copy, original, ...(await Promise.all(['skimage_coffee.jpg', 'opencv-doc_baboon.jpg', 'animals_mammals_cats_tiger.png'].map(imageBytes)))].map(
        async (bytes) => (await server.predict(bytes)).body.embed.vector as number[],
      ),
    );
    const toOriginal = cosine(copyVector!, originalVector!);
    const toOthers = otherVectors.map((other) => cosine(copyVector!, other));
    assert.ok(toOriginal > 0.85, `cosine to original ${toOriginal}`);
    for (const toOther of toOthers) assert.ok(toOriginal - toOther > 0.2, `original ${toOriginal} vs other ${toOther}`);
  });

  test('decodes PNG with alpha, WebP, GIF and TIFF and reports their format', async () => {
    const png = await imageBytes('animals_mammals_cats_tiger.png');
    for (const format of ['png', 'webp', 'gif', 'tiff'] as const) {
      const bytes = format === 'png' ? png : await sharp(png).toFormat(format).toBuffer();
      const { status, body } = await server.predict(bytes);
      assert.equal(status, 200, format);
      assert.deepEqual(body.image, { width: 198, height: 120, format });
    }
  });

  test('reports the size after EXIF orientation', async () => {
    const rotated = await sharp(await imageBytes('skimage_coffee.jpg')).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const { status, body } = await server.predict(rotated);
    assert.equal(status, 200);
    assert.deepEqual(body.image, { width: 400, height: 600, format: 'jpeg' });
  });
});

describe('POST /predict embed_model', () => {
  test('names the embedder of the image and of every object (detected, worn, external): its id and length', async () => {
    const [astronaut, plant] = await Promise.all([imageBytes('skimage_astronaut.jpg'), imageBytes('opencv-doc_plant.jpg')]);
    const external = JSON.stringify({ model: 'detr', objects: [{ label: 'vase', score: 0.9, box: [150, 61, 380, 321] }] });
    for (const { modelId, dim } of EMBEDDERS) {
      const objects = [];
      for (const [bytes, fields] of [[astronaut, {}], [plant, {}], [plant, { detections: external }]] as const) {
        const { status, body } = await server.predict(bytes, 'detect,embed', { embed_model: modelId, ...fields });
        assert.equal(status, 200);
        assert.deepEqual([body.embed.model, body.embed.dim, body.embed.vector.length], [modelId, dim, dim]);
        assert.ok(Math.abs(norm(body.embed.vector) - 1) < 1e-5);
        objects.push(...body.detect.objects);
      }
      assert.ok(objects.some(({ type }) => (GARMENT_LABELS as readonly string[]).includes(type)), 'no garment');
      assert.ok(objects.some(({ label }) => label === 'vase'), 'no vase');
      for (const { type, embedding } of objects) {
        assert.equal(embedding.length, dim, `${modelId}: ${type}`);
        assert.ok(Math.abs(norm(embedding) - 1) < 1e-5, `${modelId}: ${type}`);
      }
    }
  });

  test('an object\'s embedding is the named embedder\'s vector of its crop', async () => {
    const plant = await imageBytes('opencv-doc_plant.jpg');
    const detections = JSON.stringify({ model: 'detr', objects: [{ label: 'vase', score: 0.9, box: [150, 61, 380, 321] }] });
    const embed_model = FUSED_EMBEDDER.modelId;
    const { body } = await server.predict(plant, 'detect', { embed_model, detections });
    // The box widened by 10 % on each side, as the crop is.
    const crop = await server.predict(plant, 'embed', { embed_model, box: [150 - 23, 61 - 26, 380 + 23, 321 + 26].join(',') });
    assert.ok(cosine(body.detect.objects[0]!.embedding, crop.body.embed.vector) > 0.999);
  });

  test('without it, the default (INFERENCE_EMBED_MODELS\'s first) answers', async () => {
    const bytes = await imageBytes('skimage_coffee.jpg');
    const [unnamed, named] = await Promise.all([server.predict(bytes), server.predict(bytes, 'embed', { embed_model: MOBILENET_V2_EMBEDDER.modelId })]);
    assert.equal(unnamed.body.embed.model, EMBED_MODELS[0]);
    assert.deepEqual(unnamed.body.embed, named.body.embed);
  });

  test('an id the service has not loaded: 400 unknown_embed_model, naming the loaded ones', async () => {
    const { status, body } = await server.predict(await imageBytes('skimage_coffee.jpg'), 'embed', { embed_model: 'clip-vit-b32' });
    assert.equal(status, 400);
    assert.deepEqual(body, {
      error: { code: 'unknown_embed_model', message: `The embed model "clip-vit-b32" is not loaded; this service has: ${EMBED_MODELS.join(', ')}.` },
    });
  });

  test('an empty or overlong id: 400 bad_embed_model', async () => {
    for (const embed_model of ['', 'm'.repeat(201)]) {
      const { status, body } = await server.predict(await imageBytes('skimage_coffee.jpg'), 'embed', { embed_model });
      assert.equal(status, 400);
      assert.equal(body.error.code, 'bad_embed_model');
    }
  });
});

describe('POST /predict errors', () => {
  test('garbage bytes: 422 undecodable_image', async () => {
    const { status, body } = await server.predict(Buffer.from('this is not an image at all'));
    assert.equal(status, 422);
    assert.equal(body.error.code, 'undecodable_image');
    assert.equal(typeof body.error.message, 'string');
  });

  test('more than 40 megapixels: 422 image_too_large', async () => {
    const huge = await sharp({ create: { width: 8000, height: 5001, channels: 3, background: '#336699' } }).png().toBuffer();
    const { status, body } = await server.predict(huge);
    assert.equal(status, 422);
    assert.equal(body.error.code, 'image_too_large');
  });

  test('no image field: 400 missing_image', async () => {
    const form = new FormData();
    form.set('tasks', 'embed');
    const { status, body } = await server.post(form);
    assert.equal(status, 400);
    assert.equal(body.error.code, 'missing_image');
  });

  test('unknown task: 400 unknown_task', async () => {
    const { status, body } = await server.predict(await imageBytes('skimage_coffee.jpg'), 'embed,telepathy');
    assert.equal(status, 400);
    assert.equal(body.error.code, 'unknown_task');
  });

  test('no tasks: 400 missing_tasks', async () => {
    const { status, body } = await server.predict(await imageBytes('skimage_coffee.jpg'), ' , ');
    assert.equal(status, 400);
    assert.equal(body.error.code, 'missing_tasks');
  });

  test('a body that is not multipart: 400 bad_request', async () => {
    const response = await fetch(`${baseUrl}/predict`, { method: 'POST', body: 'tasks=embed' });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as ErrorBody).error.code, 'bad_request');
  });

  test('a body over 50 MB: 413 payload_too_large', async () => {
    const form = new FormData();
    form.set('tasks', 'embed');
    form.set('image', new Blob([new Uint8Array(51 * 1024 * 1024)]), 'big.jpg');
    const { status, body } = await server.post(form);
    assert.equal(status, 413);
    assert.equal(body.error.code, 'payload_too_large');
  });

  test('a client that hangs up mid-body is not logged as a failure of the service', async () => {
    const before = server.errorOutput().length;
    const { hostname, port } = new URL(baseUrl);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    socket.write(`POST /predict HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: multipart/form-data; boundary=x\r\ncontent-length: 100000\r\n\r\n--x\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(server.errorOutput().slice(before), '');
    assert.equal((await fetch(`${baseUrl}/health`)).status, 200);
  });

  test('GET /predict: 405 method_not_allowed', async () => {
    const response = await fetch(`${baseUrl}/predict`);
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'POST');
    assert.equal(((await response.json()) as ErrorBody).error.code, 'method_not_allowed');
  });

  test('unknown path: 404 not_found', async () => {
    const response = await fetch(`${baseUrl}/nowhere`);
    assert.equal(response.status, 404);
    assert.equal(((await response.json()) as ErrorBody).error.code, 'not_found');
  });

  test('the service still answers after all of the above', async () => {
    assert.equal((await fetch(`${baseUrl}/health`)).status, 200);
  });
});
