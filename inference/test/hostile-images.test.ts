/**
 * Hostile images (devtools/hostile-images.ts: bombs, expanding data, truncated and corrupt files of every format,
 * lying content types, animated GIF and WebP, CMYK, 16-bit, grey, palette and alpha, EXIF orientation) posted to the
 * real service: each gets its error or a correct result, never a 5xx, and the service's memory stays bounded (read
 * from /proc: VmHWM, reset through clear_refs, is its peak resident memory).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import {
  HOSTILE_SOURCE,
  hostileImages,
  rawPixels,
  SECOND_FRAME_COLOUR,
  type HostileGroup,
  type HostileImage,
} from '@edge-image-search/devtools/hostile-images';
import { cosine, IMAGES_DIR, png, startServer, type Box, type PredictBody, type RunningServer } from './harness.ts';

const EMBED_DIM = 448;
/**
 * Peak resident memory the expanding files may add, decoded one at a time: the most any needs is the 4:4:4
 * progressive JPEG's whole coefficient buffer (240 MB at 40 MP); measured 290 MB in all.
 */
const MAX_PEAK_GROWTH_MB = 450;
/** Resident memory they may leave behind (measured 40-55 MB): no decoded image, no heap grown to hold one. */
const MAX_RSS_GROWTH_MB = 120;

let server: RunningServer;
let images: HostileImage[];
let sourcePng: Buffer;
let greyPng: Buffer;

before(async () => {
  const source = await rawPixels(await readFile(path.join(IMAGES_DIR, HOSTILE_SOURCE)));
  [server, images, sourcePng, greyPng] = await Promise.all([
    // As the Dockerfile runs it: image buffers mapped, so that they go back to the system when freed (by default
    // glibc raises this threshold to 32 MB, and a run of 40 MP files leaves half a gigabyte more resident).
    startServer({ MALLOC_MMAP_THRESHOLD_: '131072' }),
    hostileImages(source),
    png(source),
    sharp(await png(source)).greyscale().toColourspace('srgb').png().toBuffer(),
  ]);
});

after(() => server?.stop());

const group = (name: HostileGroup): HostileImage[] => images.filter((image) => image.group === name);

/** VmRSS and VmHWM of the service, in MB. */
async function memory(): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${server.pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

const mb = (value: number): string => `${value.toFixed(0)} MB`;

/** Resets the service's peak resident memory to its current one. */
const resetPeak = (): Promise<void> => writeFile(`/proc/${server.pid}/clear_refs`, '5');

type Answer = { status: number; body: PredictBody };

const predict = (image: HostileImage, tasks = 'embed'): Promise<Answer> => server.predict(image.bytes, tasks);

function assertRefused(image: HostileImage, { status, body }: Answer, code: string): void {
  assert.equal(status, 422, `${image.name}: HTTP ${status} ${JSON.stringify(body)}`);
  assert.equal(body.error.code, code, `${image.name}: ${body.error.message}`);
  assert.match(body.error.message, /\S/);
}

function assertDecoded(image: HostileImage, { status, body }: Answer): void {
  assert.equal(status, 200, `${image.name}: HTTP ${status} ${JSON.stringify(body.error)}`);
  assert.deepEqual(body.image, { width: image.width, height: image.height, format: image.format }, image.name);
  assert.equal(body.embed.vector.length, EMBED_DIM, image.name);
  assert.ok(body.embed.vector.every(Number.isFinite), `${image.name}: a vector of finite numbers`);
}

const embeddings = new Map<Uint8Array, Promise<number[]>>();

/** The embedding of some bytes, posted once. */
function embedding(bytes: Uint8Array): Promise<number[]> {
  let vector = embeddings.get(bytes);
  if (!vector) {
    vector = server.predict(bytes).then(({ status, body }) => {
      assert.equal(status, 200, JSON.stringify(body.error));
      return body.embed.vector;
    });
    embeddings.set(bytes, vector);
  }
  return vector;
}

function intersectionOverUnion(a: Box, b: Box): number {
  const width = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const height = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const area = (box: Box) => (box[2] - box[0]) * (box[3] - box[1]);
  return (width * height) / (area(a) + area(b) - width * height);
}

describe('decompression bombs', () => {
  test('a tiny file declaring over 40 MP or a side over 65535 px, any format: 422 image_too_large', async (t) => {
    const before = await memory();
    await resetPeak();
    for (const image of group('bomb')) assertRefused(image, await predict(image), 'image_too_large');
    const { rss, peak } = await memory();
    t.diagnostic(`${group('bomb').length} bombs: RSS ${mb(before.rss)} -> ${mb(rss)}, peak ${mb(peak)}`);
    // Refused from the header: not one pixel buffer allocated.
    assert.ok(peak - before.rss < 50, `peak ${peak} MB over ${before.rss} MB`);
  });

  test('gigabytes of data past a small declared size, 40 MP in a few KB: decoded, memory bounded', async (t) => {
    const before = await memory();
    await resetPeak();
    for (const image of group('expanding')) {
      const started = performance.now();
      assertDecoded(image, await predict(image));
      const { peak } = await memory();
      const elapsed = Math.round(performance.now() - started);
      t.diagnostic(`${image.name} (${image.bytes.byteLength} bytes): ${elapsed} ms, peak ${mb(peak)}`);
    }
    const { rss, peak } = await memory();
    t.diagnostic(`RSS ${mb(before.rss)} -> ${mb(rss)}, peak ${mb(peak)}`);
    assert.ok(peak - before.rss < MAX_PEAK_GROWTH_MB, `peak ${peak} MB over ${before.rss} MB`);
    assert.ok(rss - before.rss < MAX_RSS_GROWTH_MB, `RSS ${rss} MB after, ${before.rss} MB before`);
  });
});

describe('damaged files', () => {
  test('every format cut inside its header and at 25, 50 and 90%: 422 undecodable_image', async () => {
    const truncated = group('truncated');
    assert.ok(new Set(truncated.map((image) => image.format)).size === 8, 'all eight formats');
    for (const image of truncated) assertRefused(image, await predict(image), 'undecodable_image');
  });

  test('bytes flipped in the header or the data: a well-formed result or 422, never a 5xx', async (t) => {
    const outcomes = new Map<string, number>();
    for (const image of group('corrupt')) {
      const { status, body } = await predict(image);
      assert.ok(status === 200 || status === 422, `${image.name}: HTTP ${status} ${JSON.stringify(body)}`);
      if (status === 200) {
        assert.equal(body.image.format, image.format, image.name);
        assert.ok(body.image.width > 0 && body.image.height > 0, image.name);
        assert.ok(Math.abs(Math.hypot(...body.embed.vector) - 1) < 1e-5, `${image.name}: a unit vector`);
      } else {
        assert.match(body.error.code, /^(undecodable_image|image_too_large)$/, image.name);
      }
      const outcome = status === 200 ? 'decoded' : body.error.code;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    t.diagnostic(JSON.stringify(Object.fromEntries(outcomes)));
  });
});

describe('files that are not what they seem, or not simple', () => {
  test('the bytes decide the format, not the file name or content type; an SVG is no spec format', async () => {
    for (const image of group('lying')) {
      const form = new FormData();
      form.set('tasks', 'embed');
      const fileName = image.contentType === 'image/jpeg' ? 'photo.jpg' : 'photo.png';
      form.set('image', new Blob([image.bytes], { type: image.contentType }), fileName);
      const response = await fetch(`${server.baseUrl}/predict`, { method: 'POST', body: form });
      const result = { status: response.status, body: (await response.json()) as PredictBody };
      if (image.outcome === 'decoded') assertDecoded(image, result);
      else assertRefused(image, result, 'undecodable_image');
    }
  });

  test('an animated GIF or WebP: the first frame, at the screen size', async (t) => {
    const first = await embedding(sourcePng);
    for (const image of group('animated')) {
      const flat = { width: image.width, height: image.height, channels: 3, background: SECOND_FRAME_COLOUR } as const;
      const second = await embedding(await sharp({ create: flat }).png().toBuffer());
      const result = await predict(image);
      assertDecoded(image, result);
      const [toFirst, toSecond] = [cosine(result.body.embed.vector, first), cosine(result.body.embed.vector, second)];
      t.diagnostic(`${image.name}: cosine ${toFirst.toFixed(4)} to the first frame, ${toSecond.toFixed(4)} to the 2nd`);
      assert.ok(toFirst > 0.97, `${image.name}: cosine ${toFirst} to the first frame`);
      assert.ok(toFirst - toSecond > 0.2, `${image.name}: cosine ${toSecond} to the second frame`);
    }
  });

  test('CMYK, 16-bit, grey, palette and alpha: the embedding of the same picture in 8-bit RGB', async (t) => {
    const references = { source: await embedding(sourcePng), grey: await embedding(greyPng) };
    for (const image of group('colour')) {
      const result = await predict(image);
      assertDecoded(image, result);
      const similarity = cosine(result.body.embed.vector, references[image.shows as 'source' | 'grey']);
      t.diagnostic(`${image.name}: cosine ${similarity.toFixed(5)}`);
      assert.ok(similarity > 0.97, `${image.name}: cosine ${similarity}`);
    }
  });
});

describe('EXIF orientation', () => {
  test('every orientation, in JPEG, PNG, WebP and TIFF: the displayed size, upright picture and boxes', async (t) => {
    const upright = await server.predict(sourcePng, 'embed,detect');
    const objects = upright.body.detect.objects.filter((object) => object.score > 0.3);
    assert.ok(objects.length > 0, 'the upright picture has an object to find');
    for (const image of group('orientation').filter((candidate) => candidate.shows === 'source')) {
      const result = await predict(image, 'embed,detect');
      assertDecoded(image, result);
      const similarity = cosine(result.body.embed.vector, upright.body.embed.vector);
      t.diagnostic(`${image.name}: cosine ${similarity.toFixed(5)} to the upright picture`);
      assert.ok(similarity > 0.98, `${image.name}: cosine ${similarity}`);
      for (const object of objects) {
        const found = result.body.detect.objects.filter((candidate) => candidate.type === object.type);
        const best = Math.max(0, ...found.map((candidate) => intersectionOverUnion(candidate.box, object.box)));
        assert.ok(best > 0.8, `${image.name}: ${object.type} at ${object.box}; best overlap ${best}`);
      }
    }
  });

  test('an eXIf chunk after the PNG pixels means nothing: the stored size', async () => {
    const [image] = group('orientation').filter((candidate) => candidate.name === 'orientation-png-6-after-idat');
    assertDecoded(image!, await predict(image!));
  });
});

test('the service still answers, and correctly, after all of the above', async () => {
  assert.equal((await fetch(`${server.baseUrl}/health`)).status, 200);
  const { status, body } = await server.predict(sourcePng);
  assert.equal(status, 200);
  assert.ok(cosine(body.embed.vector, await embedding(sourcePng)) > 0.9999);
});
