/**
 * The pure-TypeScript BMP, PNM and Sun raster decoders (src/image/formats/),
 * without the server: exact round trips through the test encoders on real
 * images, hand-made files for the corners real files use, and hostile input.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { decodeRawImage, ImageFormatError, sniffRawFormat, type FormatErrorKind, type RawImage } from '../src/image/formats/index.ts';
import {
  bmpPixels,
  encodeBmp,
  FORMAT_VARIANTS,
  type RawPixels,
} from '@edge-image-search/devtools/image-formats';
import { loadPixels, transparentCutOut } from './harness.ts';

const OWN_FORMATS = new Set(['bmp', 'pnm', 'sunraster']);
const images: { name: string; image: RawPixels }[] = [];

before(async () => {
  const [photo, cutOut] = await Promise.all([loadPixels('skimage_chelsea.jpg'), transparentCutOut('animals_mammals_cats_tiger.png')]);
  images.push({ name: 'chelsea (RGB, 451 px wide)', image: photo }, { name: 'tiger (RGBA)', image: cutOut.image });
});

/** RGBA samples of either layout, for comparing pixels whatever the channel count. */
function rgba(image: RawPixels | RawImage): Uint8Array {
  if (image.channels === 4) return image.data;
  const out = new Uint8Array(image.width * image.height * 4);
  for (let i = 0, j = 0; i < image.data.length; i += 3, j += 4) {
    out[j] = image.data[i]!;
    out[j + 1] = image.data[i + 1]!;
    out[j + 2] = image.data[i + 2]!;
    out[j + 3] = 255;
  }
  return out;
}

function decode(bytes: Uint8Array | string, maxPixels?: number): RawImage {
  const input = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes;
  const image = decodeRawImage(input, maxPixels === undefined ? undefined : { maxPixels });
  assert.ok(image, 'not recognised');
  return image;
}

/** Asserts that decoding throws an ImageFormatError (of that kind), quickly. */
function assertRefused(bytes: Uint8Array | string, kind?: FormatErrorKind, message?: RegExp): void {
  const started = performance.now();
  assert.throws(
    () => decode(bytes),
    (error: unknown) => {
      assert.ok(error instanceof ImageFormatError, `not an ImageFormatError: ${String(error)}`);
      if (kind) assert.equal(error.kind, kind, error.message);
      if (message) assert.match(error.message, message);
      return true;
    },
  );
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 100, `took ${elapsed} ms`);
}

/** Grey RGB rows, e.g. [[0, 255], [255, 0]]. */
function greyRows(rows: number[][]): Uint8Array {
  return Uint8Array.from(rows.flat().flatMap((v) => [v, v, v]));
}

// ---------------------------------------------------------------------------
// Hand-made BMP files

type BmpSpec = {
  width: number;
  height: number;
  bitCount: number;
  compression?: number;
  headerSize?: number;
  palette?: number[][];
  masks?: number[];
  pixels: number[];
  /** bfOffBits; the real offset unless said. */
  dataOffset?: number;
  sizeImage?: number;
};

function bmpFile(spec: BmpSpec): Uint8Array {
  const headerSize = spec.headerSize ?? 40;
  const bytes: number[] = [];
  const u16 = (v: number) => bytes.push(v & 0xff, (v >>> 8) & 0xff);
  const u32 = (v: number) => bytes.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  bytes.push(0x42, 0x4d);
  u32(0);
  u32(0);
  u32(0); // patched
  u32(headerSize);
  if (headerSize === 12) {
    u16(spec.width);
    u16(spec.height);
    u16(1);
    u16(spec.bitCount);
  } else {
    u32(spec.width);
    u32(spec.height);
    u16(1);
    u16(spec.bitCount);
    u32(spec.compression ?? 0);
    u32(spec.sizeImage ?? 0);
    u32(0);
    u32(0);
    u32(spec.palette?.length ?? 0);
    u32(0);
    for (const mask of spec.masks ?? []) u32(mask);
    while (bytes.length < 14 + headerSize) bytes.push(0);
  }
  for (const [r, g, b] of spec.palette ?? []) {
    bytes.push(b!, g!, r!);
    if (headerSize !== 12) bytes.push(0);
  }
  const offset = bytes.length;
  bytes.push(...spec.pixels);
  const out = Uint8Array.from(bytes);
  new DataView(out.buffer).setUint32(10, spec.dataOffset ?? offset, true);
  return out;
}

/** 256 grey entries: index i is (i, i, i). */
const GREY_PALETTE = Array.from({ length: 256 }, (_, i) => [i, i, i]);

function bmpHeaderOnly(width: number, height: number, bitCount = 24, length = 60): Uint8Array {
  const file = bmpFile({ width, height, bitCount, pixels: [] });
  const out = new Uint8Array(length);
  out.set(file.subarray(0, Math.min(length, file.length)));
  return out;
}

// ---------------------------------------------------------------------------

describe('format sniffing', () => {
  test('names BMP, PNM and Sun raster by their bytes, and nothing else', async () => {
    assert.equal(sniffRawFormat(Buffer.from('BM')), 'bmp');
    for (const magic of ['P1\n', 'P2 ', 'P3\t', 'P4\r', 'P5\n', 'P6#x']) assert.equal(sniffRawFormat(Buffer.from(magic)), 'pnm', magic);
    assert.equal(sniffRawFormat(Uint8Array.of(0x59, 0xa6, 0x6a, 0x95)), 'sunraster');
    const rgb = images[0]!.image;
    for (const variant of FORMAT_VARIANTS.filter((v) => !OWN_FORMATS.has(v.format))) {
      const bytes = await variant.encode(rgb);
      assert.equal(sniffRawFormat(bytes), null, variant.name);
      assert.equal(decodeRawImage(bytes), null, variant.name);
    }
    for (const other of ['', 'B', 'P7\n1 1\n', 'P6', 'P9 1 1', 'PX', 'not an image', '\x59\xa6\x6a']) {
      assert.equal(decodeRawImage(Buffer.from(other, 'latin1')), null, JSON.stringify(other));
    }
  });
});

describe('round trips through the test encoders', () => {
  for (const variant of FORMAT_VARIANTS.filter((v) => OWN_FORMATS.has(v.format))) {
    test(`${variant.name} decodes to exactly the pixels written`, async () => {
      for (const { name, image } of images) {
        const decoded = decode(await variant.encode(image));
        assert.equal(decoded.format, variant.format);
        assert.equal(decoded.width, image.width, name);
        assert.equal(decoded.height, image.height, name);
        assert.equal(decoded.data.length, decoded.width * decoded.height * decoded.channels, name);
        assert.ok(Buffer.from(rgba(decoded)).equals(rgba(variant.pixels(image))), `${name}: pixels differ`);
      }
    });
  }

  test('alpha survives only where the format keeps it', async () => {
    const { image } = images[1]!;
    const byName = (name: string) => FORMAT_VARIANTS.find((variant) => variant.name === name)!;
    for (const name of ['bmp-32-v4-alpha', 'bmp-32-v5-alpha']) assert.equal(decode(await byName(name).encode(image)).channels, 4, name);
    // BI_RGB with the fourth byte zero and Sun raster's zero pad byte are opaque, not transparent.
    for (const name of ['bmp-32', 'bmp-32-bitfields', 'sun-32', 'bmp-24']) assert.equal(decode(await byName(name).encode(image)).channels, 3, name);
  });

  test('a BITMAPCOREHEADER file with a 3-byte-entry palette', () => {
    const { image } = images[0]!;
    for (const bitsPerPixel of [1, 4, 8] as const) {
      const options = { header: 'core', bitsPerPixel } as const;
      assert.ok(Buffer.from(rgba(decode(encodeBmp(image, options)))).equals(rgba(bmpPixels(image, options))), `${bitsPerPixel} bpp`);
    }
  });

  test('top-down and bottom-up files of one image decode alike', () => {
    const { image } = images[0]!;
    const bottomUp = encodeBmp(image, {});
    const topDown = encodeBmp(image, { topDown: true });
    assert.notDeepEqual(bottomUp, topDown);
    assert.ok(new DataView(topDown.buffer).getInt32(22, true) < 0);
    assert.deepEqual(decode(topDown).data, decode(bottomUp).data);
  });
});

describe('BMP', () => {
  test('bottom-up rows, top-down rows (negative height) and 4-byte row padding', () => {
    // 3x2, 24 bpp: rows of 9 bytes padded to 12. Stored bottom row first.
    const rowA = [0, 0, 255, 0, 255, 0, 255, 0, 0, 0, 0, 0]; // red, green, blue (as BGR)
    const rowB = [255, 255, 255, 0, 0, 0, 128, 128, 128, 0, 0, 0]; // white, black, grey
    const expected = Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128]);
    assert.deepEqual(decode(bmpFile({ width: 3, height: 2, bitCount: 24, pixels: [...rowB, ...rowA] })).data, expected);
    assert.deepEqual(decode(bmpFile({ width: 3, height: -2, bitCount: 24, pixels: [...rowA, ...rowB] })).data, expected);
  });

  test('1-, 2-, 4- and 8-bit palettes, packed from the high bits', () => {
    const palette = [[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 0, 255]];
    const image = decode(bmpFile({ width: 9, height: 1, bitCount: 1, palette, pixels: [0b10110000, 0b10000000, 0, 0] }));
    assert.deepEqual(image.data, greyRows([[255, 0, 255, 255, 0, 0, 0, 0, 255]]));
    const two = decode(bmpFile({ width: 5, height: 1, bitCount: 2, palette, pixels: [0b00011011, 0b11000000, 0, 0] }));
    assert.deepEqual([...two.data], [0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0, 255, 0, 0, 255]);
    const four = decode(bmpFile({ width: 3, height: 1, bitCount: 4, palette, pixels: [0x21, 0x30, 0, 0] }));
    assert.deepEqual([...four.data], [255, 0, 0, 255, 255, 255, 0, 0, 255]);
    // An index past the palette reads black.
    const eight = decode(bmpFile({ width: 2, height: 1, bitCount: 8, palette, pixels: [2, 200, 0, 0] }));
    assert.deepEqual([...eight.data], [255, 0, 0, 0, 0, 0]);
  });

  test('16-bit: 5-5-5 by default, BI_BITFIELDS 5-6-5 and 4-4-4-4 with alpha', () => {
    const rgb555 = decode(bmpFile({ width: 2, height: 1, bitCount: 16, pixels: [0x00, 0x7c, 0xff, 0x03] }));
    assert.deepEqual([...rgb555.data], [255, 0, 0, 0, 255, 255]);
    const masks565 = [0xf800, 0x07e0, 0x001f];
    const rgb565 = decode(bmpFile({ width: 2, height: 1, bitCount: 16, compression: 3, masks: masks565, pixels: [0xe0, 0x07, 0x10, 0x84] }));
    assert.deepEqual([...rgb565.data], [0, 255, 0, 132, 130, 132]);
    // BITMAPV4HEADER-sized masks, alpha in the top nibble.
    const argb = decode(
      bmpFile({ width: 2, height: 1, bitCount: 16, compression: 3, headerSize: 108, masks: [0x0f00, 0x00f0, 0x000f, 0xf000], pixels: [0x0f, 0xf0, 0x00, 0x8f] }),
    );
    assert.equal(argb.channels, 4);
    assert.deepEqual([...argb.data], [0, 0, 255, 255, 255, 0, 0, 136]);
  });

  test('32-bit: BI_RGB ignores an all-zero fourth byte, uses a non-zero one; BI_ALPHABITFIELDS', () => {
    const opaque = decode(bmpFile({ width: 2, height: 1, bitCount: 32, pixels: [1, 2, 3, 0, 4, 5, 6, 0] }));
    assert.equal(opaque.channels, 3);
    assert.deepEqual([...opaque.data], [3, 2, 1, 6, 5, 4]);
    const translucent = decode(bmpFile({ width: 2, height: 1, bitCount: 32, pixels: [1, 2, 3, 0, 4, 5, 6, 128] }));
    assert.equal(translucent.channels, 4);
    assert.deepEqual([...translucent.data], [3, 2, 1, 0, 6, 5, 4, 128]);
    const alphaBitfields = decode(
      bmpFile({ width: 1, height: 1, bitCount: 32, compression: 6, masks: [0xff, 0xff00, 0xff0000, 0xff000000], pixels: [10, 20, 30, 40] }),
    );
    assert.deepEqual([...alphaBitfields.data], [10, 20, 30, 40]);
  });

  test('RLE8: the encoded and absolute runs, delta, end of line and end of bitmap of the Windows documentation', () => {
    // 03 04 05 06 00 03 45 56 67 00 02 78 00 02 05 01 02 78 00 00 09 1E 00 01
    const stream = [3, 4, 5, 6, 0, 3, 0x45, 0x56, 0x67, 0, 2, 0x78, 0, 2, 5, 1, 2, 0x78, 0, 0, 9, 0x1e, 0, 1];
    const image = decode(bmpFile({ width: 20, height: 3, bitCount: 8, compression: 1, palette: GREY_PALETTE, pixels: stream }));
    // Bottom row (stored first): 04 x3, 06 x5, 45 56 67 (absolute, padded), 78 x2; a delta of 5 right and 1 up;
    // 78 x2; end of line; 1E x9; end of bitmap. Skipped pixels are palette entry 0.
    const row0 = [4, 4, 4, 6, 6, 6, 6, 6, 0x45, 0x56, 0x67, 0x78, 0x78, ...Array<number>(7).fill(0)];
    const row1 = Array<number>(20).fill(0);
    row1.splice(18, 2, 0x78, 0x78);
    const row2 = [...Array<number>(9).fill(0x1e), ...Array<number>(11).fill(0)];
    assert.deepEqual(image.data, greyRows([row2, row1, row0]));
  });

  test('RLE4: the same stream of nibbles', () => {
    // 03 04 05 06 00 06 45 56 67 00 04 78 00 02 05 01 04 78 00 00 09 1E 00 01
    const stream = [3, 4, 5, 6, 0, 6, 0x45, 0x56, 0x67, 0, 4, 0x78, 0, 2, 5, 1, 4, 0x78, 0, 0, 9, 0x1e, 0, 1];
    const image = decode(bmpFile({ width: 32, height: 3, bitCount: 4, compression: 2, palette: GREY_PALETTE.slice(0, 16), pixels: stream }));
    const row0 = [0, 4, 0, 0, 6, 0, 6, 0, 4, 5, 5, 6, 6, 7, 7, 8, 7, 8, ...Array<number>(14).fill(0)];
    const row1 = Array<number>(32).fill(0);
    row1.splice(23, 4, 7, 8, 7, 8);
    const row2 = [1, 0xe, 1, 0xe, 1, 0xe, 1, 0xe, 1, ...Array<number>(23).fill(0)];
    assert.deepEqual(image.data, greyRows([row2, row1, row0]));
  });

  test('RLE: skipped pixels keep palette entry 0; a run past the right edge is clipped', () => {
    const palette = [[9, 9, 9], ...GREY_PALETTE.slice(1)];
    // Row 0: 5 x 200 on a 3-wide image, end of line; row 1: end of bitmap at once.
    const image = decode(bmpFile({ width: 3, height: 2, bitCount: 8, compression: 1, palette, pixels: [5, 200, 0, 0, 0, 1] }));
    assert.deepEqual(image.data, greyRows([[9, 9, 9], [200, 200, 200]]));
  });

  test('corrupt RLE: a delta out of the image, data ending inside a run or before the last row, a row far past the edge', () => {
    const rle8 = (pixels: number[], width = 4, height = 2) =>
      bmpFile({ width, height, bitCount: 8, compression: 1, palette: GREY_PALETTE, pixels });
    assertRefused(rle8([0, 2, 9, 0]), 'corrupt', /delta/);
    assertRefused(rle8([0, 2, 0, 5]), 'corrupt', /delta/);
    assertRefused(rle8([0, 2, 1]), 'truncated');
    assertRefused(rle8([0, 5, 1, 2]), 'truncated', /absolute run/);
    assertRefused(rle8([2, 7, 0, 0]), 'truncated', /row 1 of 2/);
    assertRefused(rle8([]), 'truncated');
    assertRefused(rle8(Array<number>(8).fill(255)), 'corrupt', /past the right edge/);
    assertRefused(bmpFile({ width: 4, height: 1, bitCount: 4, compression: 2, palette: GREY_PALETTE.slice(0, 16), pixels: [0, 7, 0x12] }), 'truncated');
  });

  test('malformed RLE ends with its data: a megabyte of end-of-line codes, and of random bytes', () => {
    const eols = bmpFile({ width: 50, height: 50, bitCount: 8, compression: 1, palette: GREY_PALETTE, pixels: [] });
    const started = performance.now();
    const huge = new Uint8Array(eols.length + (1 << 20));
    huge.set(eols);
    assert.equal(decode(huge).width, 50); // 00 00 = end of line, past the last row: harmless
    let seed = 7;
    for (let i = eols.length; i < huge.length; i++) huge[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    try {
      decode(huge);
    } catch (error) {
      assert.ok(error instanceof ImageFormatError, String(error));
    }
    assert.ok(performance.now() - started < 2000);
  });

  test('RLE may declare a size its data does not fill (within the pixel limit)', () => {
    const image = decode(bmpFile({ width: 1000, height: 1000, bitCount: 8, compression: 1, palette: GREY_PALETTE, pixels: [0, 1] }));
    assert.equal(image.data.length, 3_000_000);
  });

  test('a zero bfOffBits: the pixels follow the palette', () => {
    const image = decode(bmpFile({ width: 2, height: 1, bitCount: 8, palette: [[1, 2, 3], [4, 5, 6]], pixels: [1, 0, 0, 0], dataOffset: 0 }));
    assert.deepEqual([...image.data], [4, 5, 6, 1, 2, 3]);
  });

  test('absurd declared sizes fail at once, before allocating', () => {
    assertRefused(bmpHeaderOnly(100_000, 100_000), 'too_large');
    assertRefused(bmpHeaderOnly(100_000, -100_000), 'too_large');
    assertRefused(bmpHeaderOnly(1, -0x80000000), 'too_large');
    assertRefused(bmpHeaderOnly(0x7fffffff, 1), 'too_large');
    assertRefused(bmpHeaderOnly(8000, 5001, 1), 'too_large');
    // Under the limit, but the pixels cannot be in 60 bytes.
    assertRefused(bmpHeaderOnly(6000, 6000), 'truncated', /pixel data/);
    assertRefused(bmpHeaderOnly(-5, 5), 'corrupt');
    assertRefused(bmpHeaderOnly(5, 0), 'corrupt');
    const core = bmpFile({ width: 0xffff, height: 0xffff, bitCount: 24, headerSize: 12, pixels: [] });
    assertRefused(core, 'too_large');
    // The limit is an option.
    assert.throws(() => decode(encodeBmp(images[0]!.image), 100_000), (error: unknown) => error instanceof ImageFormatError && error.kind === 'too_large');
  });

  test('truncated files, cut anywhere, are refused', async () => {
    const { image } = images[1]!;
    for (const variant of FORMAT_VARIANTS.filter((v) => v.format === 'bmp')) {
      const bytes = await variant.encode(image);
      for (const length of [2, 10, 14, 20, 40, 54, 60, 100, Math.floor(bytes.length / 2), bytes.length - 8]) {
        assertRefused(bytes.subarray(0, length));
      }
    }
  });

  test('unknown headers, depths and compressions are refused', () => {
    const base = { width: 1, height: 1, pixels: [0, 0, 0, 0] };
    assertRefused(bmpFile({ ...base, bitCount: 24, headerSize: 200 }), 'unsupported');
    assertRefused(bmpFile({ ...base, bitCount: 24, headerSize: 8 }), 'unsupported');
    assertRefused(bmpFile({ ...base, bitCount: 64 }), 'unsupported');
    assertRefused(bmpFile({ ...base, bitCount: 0, compression: 4 }), 'unsupported');
    assertRefused(bmpFile({ ...base, bitCount: 24, compression: 5 }), 'unsupported');
    assertRefused(bmpFile({ ...base, bitCount: 24, compression: 1 }), 'corrupt');
    assertRefused(bmpFile({ ...base, bitCount: 8, compression: 9 }), 'corrupt');
    assertRefused(bmpFile({ ...base, bitCount: 8, palette: [] , dataOffset: 54 }), 'corrupt', /palette/);
  });
});

describe('PNM', () => {
  test('comments anywhere in the header and between ASCII samples; every whitespace character', () => {
    const text = 'P2 # a comment after the magic\n# a line of comment\n3#width, no space before the comment\n\t2 # height\r\n255#maxval\n0 1 2 # in the raster\n3\v4\f5\n';
    assert.deepEqual(decode(text).data, greyRows([[0, 1, 2], [3, 4, 5]]));
    assert.deepEqual(decode('P6#right after the magic\n1 1\n255\nABC').data, Uint8Array.from([65, 66, 67]));
  });

  test('binary rasters start after exactly one whitespace character, or after a comment ending the maxval', () => {
    // The raster's first byte is itself whitespace (10, 32): it must not be skipped.
    assert.deepEqual(decode('P5\n2 1\n255\n\n ').data, greyRows([[10, 32]]));
    assert.deepEqual(decode('P5 2 1 255# comment\n\t\r').data, greyRows([[9, 13]]));
    assert.deepEqual(decode('P4\n3 1 \u00a0').data, greyRows([[0, 255, 0]]));
    assertRefused('P5\n2 1\n255X\n\n', 'corrupt', /whitespace/);
  });

  test('P1: 1 is black, digits need no separators; P4 rows pad to a byte', () => {
    assert.deepEqual(decode('P1\n3 2\n010\n1 0 1').data, greyRows([[255, 0, 255], [0, 255, 0]]));
    assert.deepEqual(decode('P1 3 1 0#c\n11').data, greyRows([[255, 0, 0]]));
    const p4 = Buffer.concat([Buffer.from('P4\n10 2\n'), Uint8Array.of(0b10000000, 0b01000000, 0b11111111, 0b11000000)]);
    const row1 = [0, ...Array<number>(8).fill(255), 0];
    assert.deepEqual(decode(p4).data, greyRows([row1, Array<number>(10).fill(0)]));
    assertRefused('P1\n2 1\n02', 'corrupt', /0 or 1/);
  });

  test('maxval scaling, 16-bit big-endian samples, clamping above maxval', () => {
    assert.deepEqual(decode('P2 3 1 15 0 15 7').data, greyRows([[0, 255, 119]]));
    assert.deepEqual(decode('P3 1 1 65535 65535 32768 0').data, Uint8Array.from([255, 128, 0]));
    const p5 = Buffer.concat([Buffer.from('P5\n3 1\n65535\n'), Uint8Array.of(0x12, 0x34, 0xff, 0xff, 0x00, 0x80)]);
    assert.deepEqual(decode(p5).data, greyRows([[Math.round((0x1234 * 255) / 65535), 255, 0]]));
    // maxval 1000 is also 16-bit.
    const p6 = Buffer.concat([Buffer.from('P6 1 1 1000\n'), Uint8Array.of(0x03, 0xe8, 0x01, 0xf4, 0x00, 0x00)]);
    assert.deepEqual(decode(p6).data, Uint8Array.from([255, 128, 0]));
    // A sample above maxval is clamped.
    assert.deepEqual(decode('P2 2 1 100 50 999').data, greyRows([[128, 255]]));
    assert.deepEqual(decode(Buffer.concat([Buffer.from('P5 1 1 100\n'), Uint8Array.of(200)])).data, greyRows([[255]]));
  });

  test('bad headers and rasters are refused', () => {
    assertRefused('P6\n1 1\n0\nabc', 'corrupt', /maxval/);
    assertRefused('P6\n1 1\n65536\nabcdef', 'corrupt', /maxval/);
    assertRefused('P6\nx 1\n255\nabc', 'corrupt', /width/);
    assertRefused('P6\n1', 'truncated');
    assertRefused('P6\n1 1', 'truncated');
    assertRefused('P6\n12345678901 1\n255\n', 'corrupt', /digits/);
    assertRefused('P6\n0 1\n255\n', 'corrupt');
    assertRefused('P6\n2 2\n255\nabcdefghijk', 'truncated');
    assertRefused('P5\n2 2\n65535\nabcdefg', 'truncated');
    assertRefused('P4\n9 2\n\u00ff\u00ff\u00ff', 'truncated');
    assertRefused('P2\n2 2\n255\n1 2 3', 'truncated');
    assertRefused('P3\n2 1\n255\n1 2 3 4 5 x', 'corrupt');
    assertRefused('P3\n1 1\n255\n1 2    \n\n\n# comment', 'truncated');
  });

  test('absurd declared sizes fail at once, before allocating', () => {
    assertRefused('P6\n100000 100000\n255\n', 'too_large');
    assertRefused('P4\n8000 5001\n', 'too_large');
    assertRefused('P6\n6000 6000\n255\nabc', 'truncated');
    assertRefused('P3\n6000 6000\n255\n1 2 3', 'truncated', /cannot fit/);
    assertRefused('P1\n6000 6000\n0101', 'truncated', /cannot fit/);
  });

  test('truncated files, cut anywhere, are refused', async () => {
    const { image } = images[1]!;
    for (const variant of FORMAT_VARIANTS.filter((v) => v.format === 'pnm')) {
      const bytes = await variant.encode(image);
      // Cutting 8 bytes takes at least one whole ASCII sample off the end.
      for (const length of [3, 5, 8, 12, 20, Math.floor(bytes.length / 2), bytes.length - 8]) {
        assertRefused(bytes.subarray(0, length));
      }
    }
  });
});

describe('Sun raster', () => {
  function sunFile(header: { width: number; height: number; depth: number; type?: number; mapType?: number; map?: number[]; length?: number }, data: number[]): Uint8Array {
    const map = header.map ?? [];
    const words = [0x59a66a95, header.width, header.height, header.depth, header.length ?? data.length, header.type ?? 1, header.mapType ?? (map.length ? 1 : 0), map.length];
    const out = new Uint8Array(32 + map.length + data.length);
    const view = new DataView(out.buffer);
    words.forEach((word, i) => view.setUint32(i * 4, word >>> 0, false));
    out.set(map, 32);
    out.set(data, 32 + map.length);
    return out;
  }

  test('RT_BYTE_ENCODED: literals, 0x80 0x00, 0x80 n v runs across rows, clipped at the end', () => {
    // 8-bit grey, 3x2 rows padded to 4 bytes: 8 bytes of raster.
    const data = [0x80, 0x00, 7, 0x80, 0x03, 9, 0x80, 0x05, 1];
    const image = decode(sunFile({ width: 3, height: 2, depth: 8, type: 2 }, data));
    // 0x80 7 9 9 | 9 9 1 1 (the run of six 1s clipped); the fourth byte of each row is padding.
    assert.deepEqual(image.data, greyRows([[128, 7, 9], [9, 9, 1]]));
    assertRefused(sunFile({ width: 3, height: 2, depth: 8, type: 2 }, [0x80, 0x01]), 'truncated', /inside a run/);
    assertRefused(sunFile({ width: 3, height: 2, depth: 8, type: 2 }, [0x80]), 'truncated');
    assertRefused(sunFile({ width: 3, height: 2, depth: 8, type: 2 }, [1, 2, 3]), 'truncated', /3 of 8/);
    // The length field bounds the compressed data.
    assertRefused(sunFile({ width: 3, height: 2, depth: 8, type: 2, length: 2 }, [0x80, 0x07, 5]), 'truncated');
  });

  test('depth 1: 1 is black, rows padded to 16 bits; with a colormap, indices into it', () => {
    const plain = decode(sunFile({ width: 3, height: 2, depth: 1 }, [0b10100000, 0, 0b01000000, 0]));
    assert.deepEqual(plain.data, greyRows([[0, 255, 0], [255, 0, 255]]));
    const mapped = decode(sunFile({ width: 2, height: 1, depth: 1, map: [10, 20, 30, 40, 50, 60] }, [0b01000000, 0]));
    assert.deepEqual([...mapped.data], [10, 30, 50, 20, 40, 60]);
  });

  test('depth 8: grey without a colormap, RMT_EQUAL_RGB planes with one, black past the map', () => {
    assert.deepEqual(decode(sunFile({ width: 1, height: 1, depth: 8 }, [77, 0])).data, greyRows([[77]]));
    const mapped = decode(sunFile({ width: 3, height: 1, depth: 8, map: [1, 2, 3, 4, 5, 6] }, [0, 1, 2, 0]));
    assert.deepEqual([...mapped.data], [1, 3, 5, 2, 4, 6, 0, 0, 0]);
    // An RMT_RAW map is skipped.
    assert.deepEqual(decode(sunFile({ width: 1, height: 1, depth: 8, mapType: 2, map: [1, 2, 3] }, [77, 0])).data, greyRows([[77]]));
  });

  test('depth 24/32: BGR, RGB for RT_FORMAT_RGB, RT_OLD, the pad byte as alpha only when used', () => {
    assert.deepEqual([...decode(sunFile({ width: 1, height: 1, depth: 24 }, [1, 2, 3, 0])).data], [3, 2, 1]);
    assert.deepEqual([...decode(sunFile({ width: 1, height: 1, depth: 24, type: 3 }, [1, 2, 3, 0])).data], [1, 2, 3]);
    assert.deepEqual([...decode(sunFile({ width: 1, height: 1, depth: 24, type: 0, length: 0 }, [1, 2, 3, 0])).data], [3, 2, 1]);
    const opaque = decode(sunFile({ width: 2, height: 1, depth: 32 }, [0, 1, 2, 3, 0, 4, 5, 6]));
    assert.equal(opaque.channels, 3);
    assert.deepEqual([...opaque.data], [3, 2, 1, 6, 5, 4]);
    const translucent = decode(sunFile({ width: 2, height: 1, depth: 32, type: 3 }, [255, 1, 2, 3, 9, 4, 5, 6]));
    assert.equal(translucent.channels, 4);
    assert.deepEqual([...translucent.data], [1, 2, 3, 255, 4, 5, 6, 9]);
  });

  test('unknown depths, types and colormap types; absurd sizes; truncation', async () => {
    assertRefused(sunFile({ width: 1, height: 1, depth: 4 }, [0, 0]), 'unsupported');
    assertRefused(sunFile({ width: 1, height: 1, depth: 8, type: 4 }, [0, 0]), 'unsupported');
    assertRefused(sunFile({ width: 1, height: 1, depth: 8, type: 0xffff }, [0, 0]), 'unsupported');
    assertRefused(sunFile({ width: 1, height: 1, depth: 8, mapType: 3 }, [0, 0]), 'unsupported');
    assertRefused(sunFile({ width: 1, height: 1, depth: 8, map: [1, 2] }, [0, 0]), 'corrupt', /colormap/);
    assertRefused(sunFile({ width: 100_000, height: 100_000, depth: 24 }, []), 'too_large');
    assertRefused(sunFile({ width: 0xffffffff, height: 0xffffffff, depth: 1 }, []), 'too_large');
    assertRefused(sunFile({ width: 0, height: 5, depth: 8 }, []), 'corrupt');
    assertRefused(sunFile({ width: 6000, height: 6000, depth: 24 }, [1, 2, 3]), 'truncated', /pixel data/);
    const withMap = sunFile({ width: 1, height: 1, depth: 8, map: [1, 2, 3] }, [0, 0]);
    new DataView(withMap.buffer).setUint32(28, 0xfffffff0, false);
    assertRefused(withMap, 'truncated', /colormap/);
    const { image } = images[1]!;
    for (const variant of FORMAT_VARIANTS.filter((v) => v.format === 'sunraster')) {
      const bytes = await variant.encode(image);
      for (const length of [4, 16, 31, 40, Math.floor(bytes.length / 2), bytes.length - 3]) assertRefused(bytes.subarray(0, length));
    }
  });
});

describe('hostile input', () => {
  test('randomly damaged files decode to consistent pixels or throw ImageFormatError, quickly', async () => {
    const small: RawPixels = await (async () => {
      const { image } = images[0]!;
      // A 37x23 corner of the photo keeps each decode cheap.
      const width = 37;
      const height = 23;
      const data = new Uint8Array(width * height * 3);
      for (let y = 0; y < height; y++) data.set(image.data.subarray(y * image.width * 3, (y * image.width + width) * 3), y * width * 3);
      return { data, width, height, channels: 3 };
    })();
    let seed = 12345;
    const random = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
    let decoded = 0;
    let refused = 0;
    const started = performance.now();
    for (const variant of FORMAT_VARIANTS.filter((v) => OWN_FORMATS.has(v.format))) {
      const original = await variant.encode(small);
      for (let round = 0; round < 150; round++) {
        const bytes = original.slice(0, round % 5 === 0 ? random(original.length) : original.length);
        const damage = 1 + random(4);
        for (let i = 0; i < damage && bytes.length > 0; i++) {
          // Headers are where the trouble is: damage them more often.
          const at = random(2) === 0 ? random(Math.min(bytes.length, 64)) : random(bytes.length);
          bytes[at] = random(3) === 0 ? 0xff : random(256);
        }
        try {
          const image = decodeRawImage(bytes, { maxPixels: 1_000_000 });
          if (image) {
            assert.equal(image.data.length, image.width * image.height * image.channels, variant.name);
            decoded++;
          }
        } catch (error) {
          assert.ok(error instanceof ImageFormatError, `${variant.name}: ${String(error)}`);
          refused++;
        }
      }
    }
    assert.ok(decoded > 0 && refused > 0, `${decoded} decoded, ${refused} refused`);
    assert.ok(performance.now() - started < 15_000);
  });
});
