/**
 * Starts the real service (node src/server.ts on a free port) and drives it
 * over HTTP with the shared test images and copies made from them with sharp.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { IMAGES_DIR, launchServer, waitUntilHealthy, type ErrorBody, type PredictBody } from './harness.ts';

/** The documented embedding length (README.md). */
const EMBED_DIM = 448;

let server: ChildProcess;
let baseUrl: string;
const first: { health?: { status: number; body: unknown }; ready?: { status: number; body: unknown } } = {};
const probe = async (path: string) => {
  const response = await fetch(`${baseUrl}${path}`);
  return { status: response.status, body: await response.json() };
};

before(async () => {
  ({ child: server, baseUrl } = await launchServer());
  [first.health, first.ready] = await Promise.all([probe('/health'), probe('/ready')]);
  await waitUntilHealthy(baseUrl);
});

after(() => {
  server.kill();
});

describe('GET /health and GET /ready', () => {
  test('/health answers as soon as the process listens; /ready only once the models are in', async () => {
    // The first probes may already find the models loaded on a fast machine.
    assert.equal(first.health!.status, 200);
    if (first.ready!.status === 503) {
      assert.deepEqual(first.ready!.body, { status: 'loading' });
      assert.deepEqual(first.health!.body, { status: 'ok', models: 'loading' });
    } else {
      assert.equal(first.ready!.status, 200);
    }
    assert.deepEqual(await probe('/health'), { status: 200, body: { status: 'ok', models: 'ready' } });
    assert.deepEqual(await probe('/ready'), { status: 200, body: { status: 'ready' } });
  });
});

describe('POST /predict embed', () => {
  test('returns the image size and format and a unit vector of the documented length', async () => {
    const { status, body } = await predict(await image('skimage_astronaut.jpg'));
    assert.equal(status, 200);
    assert.deepEqual(body.image, { width: 512, height: 512, format: 'jpeg' });
    assert.equal(body.embed.dim, EMBED_DIM);
    assert.equal(body.embed.vector.length, EMBED_DIM);
    assert.match(body.embed.model, /\S/);
    assert.ok(Math.abs(norm(body.embed.vector) - 1) < 1e-5, `norm ${norm(body.embed.vector)}`);
  });

  test('gives identical vectors for the same image twice', async () => {
    const bytes = await image('opencv-doc_fruits.jpg');
    const first = await predict(bytes);
    const second = await predict(bytes);
    assert.deepEqual(first.body.embed.vector, second.body.embed.vector);
  });

  test('puts a flipped, slightly cropped copy much closer to its original than to other images', async () => {
    const original = await image('skimage_chelsea.jpg');
    const { width = 0, height = 0 } = await sharp(original).metadata();
    const copy = await sharp(original)
      .extract({ left: Math.round(width * 0.08), top: Math.round(height * 0.05), width: Math.round(width * 0.85), height: Math.round(height * 0.9) })
      .flop()
      .jpeg({ quality: 80 })
      .toBuffer();
    const [copyVector, originalVector, ...otherVectors] = await Promise.all(
      [copy, original, ...(await Promise.all(['skimage_coffee.jpg', 'opencv-doc_baboon.jpg', 'animals_mammals_cats_tiger.png'].map(image)))].map(
        async (bytes) => (await predict(bytes)).body.embed.vector as number[],
      ),
    );
    const toOriginal = cosine(copyVector!, originalVector!);
    const toOthers = otherVectors.map((other) => cosine(copyVector!, other));
    assert.ok(toOriginal > 0.85, `cosine to original ${toOriginal}`);
    for (const toOther of toOthers) assert.ok(toOriginal - toOther > 0.2, `original ${toOriginal} vs other ${toOther}`);
  });

  test('decodes PNG with alpha, WebP, GIF and TIFF and reports their format', async () => {
    const png = await image('animals_mammals_cats_tiger.png');
    for (const format of ['png', 'webp', 'gif', 'tiff'] as const) {
      const bytes = format === 'png' ? png : await sharp(png).toFormat(format).toBuffer();
      const { status, body } = await predict(bytes);
      assert.equal(status, 200, format);
      assert.deepEqual(body.image, { width: 198, height: 120, format });
    }
  });

  test('reports the size after EXIF orientation', async () => {
    const rotated = await sharp(await image('skimage_coffee.jpg')).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const { status, body } = await predict(rotated);
    assert.equal(status, 200);
    assert.deepEqual(body.image, { width: 400, height: 600, format: 'jpeg' });
  });
});

describe('POST /predict errors', () => {
  test('garbage bytes: 422 undecodable_image', async () => {
    const { status, body } = await predict(Buffer.from('this is not an image at all'));
    assert.equal(status, 422);
    assert.equal(body.error.code, 'undecodable_image');
    assert.equal(typeof body.error.message, 'string');
  });

  test('more than 40 megapixels: 422 image_too_large', async () => {
    const huge = await sharp({ create: { width: 8000, height: 5001, channels: 3, background: '#336699' } }).png().toBuffer();
    const { status, body } = await predict(huge);
    assert.equal(status, 422);
    assert.equal(body.error.code, 'image_too_large');
  });

  test('no image field: 400 missing_image', async () => {
    const form = new FormData();
    form.set('tasks', 'embed');
    const { status, body } = await post(form);
    assert.equal(status, 400);
    assert.equal(body.error.code, 'missing_image');
  });

  test('unknown task: 400 unknown_task', async () => {
    const { status, body } = await predict(await image('skimage_coffee.jpg'), 'embed,telepathy');
    assert.equal(status, 400);
    assert.equal(body.error.code, 'unknown_task');
  });

  test('no tasks: 400 missing_tasks', async () => {
    const { status, body } = await predict(await image('skimage_coffee.jpg'), ' , ');
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
    const { status, body } = await post(form);
    assert.equal(status, 413);
    assert.equal(body.error.code, 'payload_too_large');
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

function image(file: string): Promise<Buffer> {
  return readFile(path.join(IMAGES_DIR, file));
}

function predict(bytes: Uint8Array, tasks = 'embed'): Promise<{ status: number; body: PredictBody }> {
  const form = new FormData();
  form.set('tasks', tasks);
  form.set('image', new Blob([bytes]), 'upload');
  return post(form);
}

async function post(form: FormData): Promise<{ status: number; body: PredictBody }> {
  const response = await fetch(`${baseUrl}/predict`, { method: 'POST', body: form });
  return { status: response.status, body: (await response.json()) as PredictBody };
}

function norm(vector: number[]): number {
  return Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
}

function cosine(a: number[], b: number[]): number {
  return a.reduce((sum, x, i) => sum + x * b[i]!, 0) / (norm(a) * norm(b));
}
