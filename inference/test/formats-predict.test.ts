/**
 * Every spec format, in the variants real files use (devtools/image-formats.ts),
 * made from real images and posted to the real service: the reported size and
 * format must be right and the embedding must match that of the same pixels
 * posted as PNG.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { encodeBmp, encodePnm, FORMAT_VARIANTS, type RawPixels } from '@edge-image-search/devtools/image-formats';
import { cosine, loadPixels, png, startServer, transparentCutOut, type RunningServer } from './harness.ts';

/**
 * Lowest cosine to the same pixels as PNG. Lossless variants decode to exactly
 * those pixels, so the service sees the same input. The lossy ones were
 * measured on the two test images (see the inference README) and are held a
 * little under that.
 */
const LOSSLESS_MIN_COSINE = 0.9999;
const LOSSY_MIN_COSINE: Record<string, number> = { jpeg: 0.97, webp: 0.97, gif: 0.99, 'tiff-jpeg': 0.95 };

let server: RunningServer;
const images: { name: string; image: RawPixels }[] = [];
let ignoringAlpha: RawPixels;
const embeddings = new Map<string, Promise<number[]>>();

before(async () => {
  const [started, photo, cutOut] = await Promise.all([
    startServer(),
    // 451 px wide: odd, so rows need padding in every format, and bit-packed rows end inside a byte.
    loadPixels('skimage_chelsea.jpg'),
    transparentCutOut('animals_mammals_cats_tiger.png'),
  ]);
  server = started;
  images.push({ name: 'chelsea (RGB)', image: photo }, { name: 'tiger (RGBA)', image: cutOut.image });
  ignoringAlpha = cutOut.ignoringAlpha;
});

after(() => server?.stop());

/** The embedding of some bytes, posted once. */
function embed(bytes: Uint8Array): Promise<number[]> {
  const key = createHash('sha256').update(bytes).digest('hex');
  let vector = embeddings.get(key);
  if (!vector) {
    vector = server.predict(bytes).then(({ status, body }) => {
      assert.equal(status, 200, JSON.stringify(body.error));
      return body.embed.vector;
    });
    embeddings.set(key, vector);
  }
  return vector;
}

describe('POST /predict with every spec format', () => {
  test('the RGBA test image is one whose alpha matters', async (t) => {
    const { image } = images[1]!;
    const honoured = await embed(await png(image));
    const ignored = await embed(await png(ignoringAlpha));
    const similarity = cosine(honoured, ignored);
    t.diagnostic(`cosine ${similarity.toFixed(5)} between alpha honoured and ignored`);
    assert.ok(similarity < 0.95, `cosine ${similarity} between alpha honoured and ignored`);
  });

  for (const variant of FORMAT_VARIANTS) {
    test(`${variant.name} (.${variant.extension})`, async (t) => {
      for (const { name, image } of images) {
        const bytes = await variant.encode(image);
        const { status, body } = await server.predict(bytes);
        assert.equal(status, 200, `${name}: ${JSON.stringify(body.error)}`);
        assert.deepEqual(body.image, { width: image.width, height: image.height, format: variant.format }, name);
        const toSamePixels = cosine(body.embed.vector, await embed(await png(variant.pixels(image))));
        const toOriginal = cosine(body.embed.vector, await embed(await png(image)));
        t.diagnostic(`${name}: ${bytes.byteLength} bytes; cosine ${toSamePixels.toFixed(5)} to the same pixels as PNG, ${toOriginal.toFixed(5)} to the original`);
        const min = variant.lossy ? (LOSSY_MIN_COSINE[variant.name] ?? 0.95) : LOSSLESS_MIN_COSINE;
        assert.ok(toSamePixels > min, `${name}: cosine ${toSamePixels} to the same pixels as PNG, want > ${min}`);
      }
    });
  }
});

describe('POST /predict refuses hostile BMP, PNM and Sun raster files', () => {
  test('a 60-byte BMP declaring 100000x100000: 422 image_too_large', async () => {
    const bytes = encodeBmp({ data: new Uint8Array(3 * 4), width: 2, height: 2, channels: 3 });
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    view.setInt32(18, 100_000, true);
    view.setInt32(22, 100_000, true);
    const { status, body } = await server.predict(bytes.subarray(0, 60));
    assert.equal(status, 422);
    assert.equal(body.error.code, 'image_too_large');
  });

  test('a PPM declaring 8000x5001 (just over 40 MP): 422 image_too_large', async () => {
    const { status, body } = await server.predict(new TextEncoder().encode('P6\n8000 5001\n255\n\0\0\0'));
    assert.equal(status, 422);
    assert.equal(body.error.code, 'image_too_large');
  });

  test('a truncated BMP, PNM and Sun raster: 422 undecodable_image', async () => {
    const { image } = images[0]!;
    for (const name of ['bmp-24', 'ppm', 'pgm-ascii', 'sun-8-rle', 'bmp-8-rle']) {
      const bytes = await FORMAT_VARIANTS.find((variant) => variant.name === name)!.encode(image);
      const { status, body } = await server.predict(bytes.subarray(0, Math.floor(bytes.byteLength / 2)));
      assert.equal(status, 422, name);
      assert.equal(body.error.code, 'undecodable_image', name);
      assert.match(body.error.message, /ends|truncated|cannot fit/, name);
    }
  });

  test('a PNM magic with no header after it: 422 undecodable_image', async () => {
    const { status, body } = await server.predict(encodePnm({ data: new Uint8Array(3), width: 1, height: 1, channels: 3 }, { kind: 6 }).subarray(0, 3));
    assert.equal(status, 422);
    assert.equal(body.error.code, 'undecodable_image');
  });
});
