/**
 * The colors task: the Lab conversion against reference values, the palette
 * function on hand-made pixels, and /predict with colors through the real
 * service (synthetic images made here with sharp, and real photos): stripes
 * of known shares, cut-outs on white and on transparency, determinism, box
 * crops, and each detected object's own colours.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { RgbPixels } from '../src/image/decode.ts';
import { cropPixels } from '../src/image/view.ts';
import { deltaE, hexToLab, labToSrgb, srgbToLab, toHex } from '@edge-image-search/contract/lab';
import { analyzeColors, dominantColors } from '../src/models/colors/palette.ts';
import { imageBytes, startServer, type PaletteColor, type RunningServer } from './harness.ts';

const MODEL = 'lab-kmeans-v1';
const MAX_COLORS = 8;

describe('Lab conversion (sRGB D65)', () => {
  // Reference values: Bruce Lindbloom's calculator / colormine, D65, sRGB companding.
  const REFERENCE: [string, [number, number, number]][] = [
    ['ff0000', [53.2408, 80.0925, 67.2032]],
    ['00ff00', [87.7347, -86.1827, 83.1793]],
    ['0000ff', [32.2970, 79.1875, -107.8602]],
    ['ffffff', [100, 0, 0]],
    ['000000', [0, 0, 0]],
    ['808080', [53.5850, 0, 0]],
    ['ffff00', [97.1393, -21.5537, 94.4780]],
  ];
  for (const [hex, expected] of REFERENCE) {
    test(`${hex} -> L ${expected[0]}, a ${expected[1]}, b ${expected[2]}`, () => {
      const lab = hexToLab(hex);
      for (let axis = 0; axis < 3; axis++) {
        assert.ok(Math.abs(lab[axis]! - expected[axis]!) < 0.01, `${hex}: got ${lab.map((v) => v.toFixed(4))}`);
      }
    });
  }

  test('Lab -> sRGB inverts it exactly (to the 8-bit value) over a 16-level grid', () => {
    for (let r = 0; r < 256; r += 17) {
      for (let g = 0; g < 256; g += 17) {
        for (let b = 0; b < 256; b += 17) {
          assert.deepEqual(labToSrgb(srgbToLab(r, g, b)), [r, g, b]);
        }
      }
    }
  });

  test('out-of-gamut Lab is clamped; hex is lower-case rrggbb', () => {
    assert.deepEqual(labToSrgb([50, 120, -120]).every((v) => v >= 0 && v <= 255), true);
    assert.equal(toHex([255, 10, 171]), 'ff0aab');
    assert.ok(deltaE(hexToLab('ff0000'), hexToLab('FE0000')) < 1);
  });
});

describe('dominantColors on raw pixels', () => {
  test('one colour: one entry, ratio 1', () => {
    assert.deepEqual(dominantColors(solid(64, 48, [30, 120, 200])), [{ hex: '1e78c8', ratio: 1 }]);
  });

  test('a uniform image is not all background: it falls back to every pixel', () => {
    const analysis = analyzeColors(solid(300, 300, [255, 255, 255]));
    assert.deepEqual(analysis.palette, [{ hex: 'ffffff', ratio: 1 }]);
    assert.equal(analysis.background, 0);
  });

  test('a fully transparent image has an empty palette', () => {
    const pixels = { ...solid(40, 40, [255, 255, 255]), alpha: Buffer.alloc(40 * 40, 0) };
    assert.deepEqual(dominantColors(pixels), []);
  });

  test('semi-transparent pixels (alpha >= 128) count with their own colour, fainter ones not at all', () => {
    // Red at alpha 160 flattened onto white, beside green at alpha 100.
    const width = 40;
    const data = Buffer.alloc(width * width * 3);
    const alpha = Buffer.alloc(width * width);
    for (let i = 0; i < width * width; i++) {
      const red = i % width < 20;
      const a = red ? 160 : 100;
      const colour = red ? [255, 0, 0] : [0, 255, 0];
      colour.forEach((c, k) => (data[i * 3 + k] = Math.round((c * a) / 255 + 255 * (1 - a / 255))));
      alpha[i] = a;
    }
    const palette = dominantColors({ data, width, height: width, alpha });
    assert.equal(palette.length, 1);
    assertColor(palette[0]!.hex, 'ff0000', 3);
  });

  test('ratios are four decimals summing to exactly 10000 parts, best first', () => {
    const pixels = stripes(333, 100, [[255, 0, 0], [0, 128, 0], [0, 0, 255], [250, 250, 0]], [0.4, 0.3, 0.2, 0.1]);
    const palette = dominantColors(pixels);
    assert.equal(palette.length, 4);
    assert.equal(Math.round(palette.reduce((sum, color) => sum + color.ratio * 10_000, 0)), 10_000);
    for (const { ratio } of palette) assert.equal(Math.round(ratio * 10_000) / 10_000, ratio);
    assert.deepEqual(palette.map((color) => color.ratio), [...palette.map((color) => color.ratio)].sort((p, q) => q - p));
  });

  test('crops carry the alpha with them', () => {
    const pixels = { ...solid(4, 2, [0, 0, 0]), alpha: Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]) };
    assert.deepEqual([...cropPixels(pixels, 1, 0, 2, 2).alpha!], [1, 2, 5, 6]);
  });
});

describe('POST /predict colors', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server?.stop());

  test('70 % red / 30 % blue stripes: ff0000 0.7, 0000ff 0.3', async () => {
    const png = await encode(stripes(300, 200, [[255, 0, 0], [0, 0, 255], [255, 0, 0], [0, 0, 255]], [0.35, 0.15, 0.35, 0.15]));
    const { status, body } = await server.predict(png, 'colors');
    assert.equal(status, 200, JSON.stringify(body.error));
    assert.deepEqual(Object.keys(body.colors).sort(), ['model', 'palette']);
    assert.equal(body.colors.model, MODEL);
    assert.equal(body.embed, undefined);
    assertPalette(body.colors.palette);
    assert.equal(body.colors.palette.length, 2, JSON.stringify(body.colors.palette));
    const [first, second] = body.colors.palette as [PaletteColor, PaletteColor];
    assertColor(first.hex, 'ff0000', 4);
    assertColor(second.hex, '0000ff', 4);
    assert.ok(Math.abs(first.ratio - 0.7) <= 0.02, `red ${first.ratio}`);
    assert.ok(Math.abs(second.ratio - 0.3) <= 0.02, `blue ${second.ratio}`);
  });

  test('the same stripes as JPEG: the same two colours within JPEG error', async () => {
    const jpeg = await sharp(await encode(stripes(300, 200, [[255, 0, 0], [0, 0, 255]], [0.7, 0.3]))).jpeg({ quality: 90 }).toBuffer();
    const { body } = await server.predict(jpeg, 'colors');
    assertPalette(body.colors.palette);
    assertColor(body.colors.palette[0]!.hex, 'ff0000', 12);
    assert.ok(Math.abs(body.colors.palette[0]!.ratio - 0.7) <= 0.03, JSON.stringify(body.colors.palette));
    assertColor(body.colors.palette[1]!.hex, '0000ff', 12);
  });

  test('a red square on white: the white border is background, red comes first with > 0.9', async () => {
    const png = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#ffffff' } })
      .composite([{ input: await solidPng(160, 120, '#e01010'), left: 120, top: 90 }])
      .png()
      .toBuffer();
    const { body } = await server.predict(png, 'colors');
    assertPalette(body.colors.palette);
    assertColor(body.colors.palette[0]!.hex, 'e01010', 3);
    assert.ok(body.colors.palette[0]!.ratio > 0.9, JSON.stringify(body.colors.palette));
  });

  test('a red square on a transparent background (whatever colour lies under it): only red', async () => {
    // The transparent area's RGB is green: only alpha says it is not there.
    const { width, height } = { width: 300, height: 240 };
    const rgba = Buffer.alloc(width * height * 4);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const inside = x >= 100 && x < 200 && y >= 60 && y < 180;
        rgba.set(inside ? [255, 0, 0, 255] : [0, 255, 0, 0], (y * width + x) * 4);
      }
    }
    const png = await sharp(rgba, { raw: { width, height, channels: 4 } }).png().toBuffer();
    const { status, body } = await server.predict(png, 'colors');
    assert.equal(status, 200);
    assert.deepEqual(body.colors.palette, [{ hex: 'ff0000', ratio: 1 }]);
  });

  test('grey + alpha PNG: only the opaque grey', async () => {
    const { width, height } = { width: 120, height: 120 };
    const greyAlpha = Buffer.alloc(width * height * 2);
    for (let i = 0; i < width * height; i++) greyAlpha.set(i % width < 30 ? [128, 255] : [0, 0], i * 2);
    const png = await sharp(greyAlpha, { raw: { width, height, channels: 2 } }).toColourspace('b-w').png().toBuffer();
    assert.equal((await sharp(png).metadata()).channels, 2);
    const { body } = await server.predict(png, 'colors');
    assert.deepEqual(body.colors.palette, [{ hex: '808080', ratio: 1 }]);
  });

  test('a photo: 2-8 colours summing to 1, and the same palette every time', async () => {
    const coffee = await imageBytes('skimage_coffee.jpg');
    const [first, second] = await Promise.all([server.predict(coffee, 'colors'), server.predict(coffee, 'embed,colors')]);
    assertPalette(first.body.colors.palette);
    assert.ok(first.body.colors.palette.length >= 2, JSON.stringify(first.body.colors.palette));
    assert.deepEqual(second.body.colors, first.body.colors);
    assert.equal(second.body.embed.vector.length, 448);
  });

  test('the box field: the colours of the box only', async () => {
    const png = await encode(stripes(200, 100, [[255, 0, 0], [0, 0, 255]], [0.5, 0.5]));
    const { status, body } = await server.predict(png, 'colors', { box: '110,10,190,90' });
    assert.equal(status, 200);
    assert.deepEqual(body.box, [110, 10, 190, 90]);
    assert.deepEqual(body.colors.palette, [{ hex: '0000ff', ratio: 1 }]);
  });

  test('detect,colors: every object gets the colours of its own box', async () => {
    const plant = await imageBytes('opencv-doc_plant.jpg');
    const { status, body } = await server.predict(plant, 'detect,colors');
    assert.equal(status, 200);
    assertPalette(body.colors.palette);
    assert.ok(body.detect.objects.length >= 2);
    for (const object of body.detect.objects) {
      assertPalette(object.colors!);
      // The same palette as asking for that box's colours.
      const alone = await server.predict(plant, 'colors', { box: object.box.join(',') });
      assert.deepEqual(object.colors, alone.body.colors.palette);
    }
    // The terracotta pot and the blue glass: their first colours differ as the objects do.
    const [pot, glass] = [near(body.detect.objects, [193, 197, 368, 333]), near(body.detect.objects, [80, 186, 172, 290])];
    const potLab = hexToLab(pot.colors![0]!.hex);
    assert.ok(potLab[1] > 10 && potLab[2] > 10, `pot ${pot.colors![0]!.hex} is not warm`);
    assert.ok(glass.colors!.some(({ hex }) => hexToLab(hex)[2] < -10), `glass ${JSON.stringify(glass.colors)} has no blue`);
  });

  test('detect alone adds no colours to objects', async () => {
    const { body } = await server.predict(await imageBytes('opencv-doc_plant.jpg'), 'detect');
    assert.ok(body.detect.objects.length > 0);
    for (const object of body.detect.objects) assert.equal(object.colors, undefined);
    assert.equal(body.colors, undefined);
  });
});

function solid(width: number, height: number, [r, g, b]: readonly number[]): RgbPixels {
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set([r!, g!, b!], i * 3);
  return { data, width, height };
}

/** Vertical stripes, left to right, each colour taking its share of the width. */
function stripes(width: number, height: number, colours: readonly (readonly number[])[], shares: readonly number[]): RgbPixels {
  const edges = shares.map((_, i) => Math.round(shares.slice(0, i + 1).reduce((sum, share) => sum + share, 0) * width));
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set(colours[edges.findIndex((edge) => x < edge)]!, (y * width + x) * 3);
  }
  return { data, width, height };
}

function encode({ data, width, height }: RgbPixels): Promise<Buffer> {
  return sharp(data, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

function solidPng(width: number, height: number, background: string): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background } }).png().toBuffer();
}

/** The documented palette format. */
function assertPalette(palette: readonly PaletteColor[]): void {
  assert.ok(Array.isArray(palette) && palette.length >= 1 && palette.length <= MAX_COLORS, JSON.stringify(palette));
  for (const { hex, ratio } of palette) {
    assert.match(hex, /^[0-9a-f]{6}$/);
    assert.ok(ratio > 0 && ratio <= 1 && Math.abs(Math.round(ratio * 10_000) - ratio * 10_000) < 1e-6, `ratio ${ratio}`);
  }
  for (let i = 1; i < palette.length; i++) assert.ok(palette[i - 1]!.ratio >= palette[i]!.ratio, 'sorted by ratio');
  assert.ok(Math.abs(palette.reduce((sum, color) => sum + color.ratio, 0) - 1) < 1e-9, JSON.stringify(palette));
}

function assertColor(actual: string, expected: string, tolerance: number): void {
  for (let offset = 0; offset < 6; offset += 2) {
    const difference = Math.abs(Number.parseInt(actual.slice(offset, offset + 2), 16) - Number.parseInt(expected.slice(offset, offset + 2), 16));
    assert.ok(difference <= tolerance, `${actual} is not within ${tolerance} of ${expected} per channel`);
  }
}

function near<T extends { box: readonly number[] }>(objects: readonly T[], box: readonly number[]): T {
  const found = objects.find((object) => object.box.every((value, i) => Math.abs(value - box[i]!) <= 15));
  assert.ok(found, `no object near ${box.join(',')}: ${JSON.stringify(objects.map((object) => object.box))}`);
  return found;
}
