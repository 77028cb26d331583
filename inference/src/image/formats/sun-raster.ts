/**
 * Sun raster (.sr, .ras): a 32-byte big-endian header (magic 0x59a66a95,
 * width, height, depth, length, type, maptype, maplength), the colormap, then
 * rows padded to 16 bits.
 *
 * Read: depth 1 (1 = black without a colormap), 8 (grey without a colormap),
 * 24 (BGR) and 32 (XBGR); types RT_OLD, RT_STANDARD, RT_BYTE_ENCODED (the 0x80
 * escape RLE) and RT_FORMAT_RGB (RGB / XRGB order); colormaps RMT_NONE and
 * RMT_EQUAL_RGB (all reds, then all greens, then all blues). An RMT_RAW map (or
 * any map of an RMT_NONE file) is skipped; a colormap is only applied to depths 1 and 8.
 *
 * The pad byte of 32-bit pixels is used as alpha only when some pixel has it
 * non-zero: most writers leave it zero.
 */
import { ByteReader, checkDimensions, ImageFormatError, type DecodeOptions, type RawImage } from './common.ts';

const MAGIC = 0x59a66a95;
const HEADER_SIZE = 32;
const RT_OLD = 0;
const RT_STANDARD = 1;
const RT_BYTE_ENCODED = 2;
const RT_FORMAT_RGB = 3;
const RMT_NONE = 0;
const RMT_EQUAL_RGB = 1;
const RMT_RAW = 2;
const RLE_ESCAPE = 0x80;

export function isSunRaster(bytes: Uint8Array): boolean {
  return bytes.byteLength >= 4 && bytes[0] === 0x59 && bytes[1] === 0xa6 && bytes[2] === 0x6a && bytes[3] === 0x95;
}

export function decodeSunRaster(bytes: Uint8Array, options?: DecodeOptions): RawImage {
  const reader = new ByteReader('sunraster', bytes);
  const fail = (kind: 'corrupt' | 'unsupported', message: string) => new ImageFormatError('sunraster', kind, message);
  if (reader.u32be(0, 'header') !== MAGIC) throw fail('corrupt', 'no Sun raster magic number');
  reader.need(0, HEADER_SIZE, 'header');
  const width = reader.u32be(4, 'header');
  const height = reader.u32be(8, 'header');
  const depth = reader.u32be(12, 'header');
  const length = reader.u32be(16, 'header');
  const type = reader.u32be(20, 'header');
  const mapType = reader.u32be(24, 'header');
  const mapLength = reader.u32be(28, 'header');

  if (depth !== 1 && depth !== 8 && depth !== 24 && depth !== 32) throw fail('unsupported', `depth ${depth}`);
  if (type !== RT_OLD && type !== RT_STANDARD && type !== RT_BYTE_ENCODED && type !== RT_FORMAT_RGB) {
    throw fail('unsupported', `raster type ${type}`);
  }
  if (mapType !== RMT_NONE && mapType !== RMT_EQUAL_RGB && mapType !== RMT_RAW) throw fail('unsupported', `colormap type ${mapType}`);
  checkDimensions('sunraster', width, height, options);
  reader.need(HEADER_SIZE, mapLength, 'colormap');

  const colormap = mapType === RMT_EQUAL_RGB && depth <= 8 ? readColormap(reader, mapLength, depth) : undefined;
  const dataOffset = HEADER_SIZE + mapLength;
  const stride = Math.ceil((width * depth) / 16) * 2;
  let pixels: Uint8Array;
  let start: number;
  if (type === RT_BYTE_ENCODED) {
    const available = bytes.byteLength - dataOffset;
    const end = dataOffset + (length > 0 && length <= available ? length : available);
    pixels = unpackRle(bytes, dataOffset, end, stride * height);
    start = 0;
  } else {
    // The last row's padding may be missing; its pixels may not.
    reader.need(dataOffset, stride * (height - 1) + Math.ceil((width * depth) / 8), 'pixel data');
    pixels = bytes;
    start = dataOffset;
  }

  const rgbOrder = type === RT_FORMAT_RGB;
  if (depth === 1) return decode1(pixels, start, stride, width, height, colormap);
  if (depth === 8) return decode8(pixels, start, stride, width, height, colormap);
  return decodeTrueColour(pixels, start, stride, width, height, depth === 32, rgbOrder);
}

/** Up to 256 RGB entries out of the planar map; missing entries read black. */
function readColormap(reader: ByteReader, mapLength: number, depth: number): Uint8Array {
  const entries = Math.floor(mapLength / 3);
  if (entries === 0) throw new ImageFormatError('sunraster', 'corrupt', 'an empty RMT_EQUAL_RGB colormap');
  const used = Math.min(entries, 1 << depth);
  const rgb = new Uint8Array(256 * 3);
  const { bytes } = reader;
  for (let i = 0; i < used; i++) {
    rgb[i * 3] = bytes[HEADER_SIZE + i]!;
    rgb[i * 3 + 1] = bytes[HEADER_SIZE + entries + i]!;
    rgb[i * 3 + 2] = bytes[HEADER_SIZE + 2 * entries + i]!;
  }
  return rgb;
}

/**
 * RT_BYTE_ENCODED: 0x80 0x00 is one 0x80 byte, 0x80 n v is n + 1 copies of v,
 * any other byte is itself. Stops once `size` bytes are out (runs are clipped);
 * input that ends before then is `truncated`.
 */
function unpackRle(bytes: Uint8Array, start: number, end: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let p = start;
  let q = 0;
  while (q < size) {
    if (p >= end) throw new ImageFormatError('sunraster', 'truncated', `the RLE data ends after ${q} of ${size} bytes`);
    const c = bytes[p++]!;
    if (c !== RLE_ESCAPE) {
      out[q++] = c;
      continue;
    }
    if (p >= end) throw new ImageFormatError('sunraster', 'truncated', 'the RLE data ends inside a run');
    const count = bytes[p++]!;
    if (count === 0) {
      out[q++] = RLE_ESCAPE;
      continue;
    }
    if (p >= end) throw new ImageFormatError('sunraster', 'truncated', 'the RLE data ends inside a run');
    const value = bytes[p++]!;
    const stop = Math.min(size, q + count + 1);
    out.fill(value, q, stop);
    q = stop;
  }
  return out;
}

function decode1(pixels: Uint8Array, start: number, stride: number, width: number, height: number, colormap: Uint8Array | undefined): RawImage {
  const out = new Uint8Array(width * height * 3);
  let target = 0;
  for (let y = 0; y < height; y++) {
    const row = start + y * stride;
    for (let x = 0; x < width; x++) {
      const bit = (pixels[row + (x >> 3)]! >> (7 - (x & 7))) & 1;
      if (colormap) {
        out[target++] = colormap[bit * 3]!;
        out[target++] = colormap[bit * 3 + 1]!;
        out[target++] = colormap[bit * 3 + 2]!;
      } else {
        const grey = bit ? 0 : 255;
        out[target++] = grey;
        out[target++] = grey;
        out[target++] = grey;
      }
    }
  }
  return { width, height, channels: 3, data: out, format: 'sunraster' };
}

function decode8(pixels: Uint8Array, start: number, stride: number, width: number, height: number, colormap: Uint8Array | undefined): RawImage {
  const out = new Uint8Array(width * height * 3);
  let target = 0;
  for (let y = 0; y < height; y++) {
    const row = start + y * stride;
    for (let x = 0; x < width; x++) {
      const index = pixels[row + x]!;
      if (colormap) {
        out[target++] = colormap[index * 3]!;
        out[target++] = colormap[index * 3 + 1]!;
        out[target++] = colormap[index * 3 + 2]!;
      } else {
        out[target++] = index;
        out[target++] = index;
        out[target++] = index;
      }
    }
  }
  return { width, height, channels: 3, data: out, format: 'sunraster' };
}

function decodeTrueColour(
  pixels: Uint8Array,
  start: number,
  stride: number,
  width: number,
  height: number,
  padded: boolean,
  rgbOrder: boolean,
): RawImage {
  const bytesPerPixel = padded ? 4 : 3;
  let hasAlpha = false;
  if (padded) {
    for (let y = 0; y < height && !hasAlpha; y++) {
      const row = start + y * stride;
      for (let x = 0; x < width; x++) {
        if (pixels[row + x * 4] !== 0) {
          hasAlpha = true;
          break;
        }
      }
    }
  }
  const channels = hasAlpha ? 4 : 3;
  const out = new Uint8Array(width * height * channels);
  // Offsets of red and blue inside a pixel (after the pad byte, if any); green is in the middle.
  const first = padded ? 1 : 0;
  const red = rgbOrder ? first : first + 2;
  const blue = rgbOrder ? first + 2 : first;
  let target = 0;
  for (let y = 0; y < height; y++) {
    let source = start + y * stride;
    for (let x = 0; x < width; x++, source += bytesPerPixel) {
      out[target++] = pixels[source + red]!;
      out[target++] = pixels[source + first + 1]!;
      out[target++] = pixels[source + blue]!;
      if (hasAlpha) out[target++] = pixels[source]!;
    }
  }
  return { width, height, channels, data: out, format: 'sunraster' };
}
