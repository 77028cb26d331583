/**
 * Hostile image files, made from one source picture, for the tests of both layers: the inference service directly
 * (inference/test/hostile-images.test.ts) and the Worker end to end (test/worker/hostile-images.test.ts, through
 * fixture-server.ts's `/hostile/...` routes).
 *
 *   const images = await hostileImages(await rawPixels(await readFile(path.join(IMAGES_DIR, HOSTILE_SOURCE))));
 *
 * Each file says what a correct service makes of it (`outcome`):
 * - `too_large`: the header declares over 40 megapixels, or a side over 65535 px; refused before any pixel is decoded;
 * - `undecodable`: no picture can be read from it; refused;
 * - `decoded`: a correct picture, displayed at `width` x `height`, showing what `shows` says;
 * - `either`: damaged so that refusing it and decoding it are both right; anything but a crash or a 5xx.
 *
 * The groups: `bomb` (tiny files declaring huge sizes, every format), `expanding` (a small declared size with data
 * that inflates to gigabytes, or 40 MP declared in a few hundred kilobytes), `truncated` and `corrupt` (every format,
 * cut at several points, bytes flipped in the header and in the data), `lying` (a content type that lies), `animated`,
 * `colour` (CMYK, 16-bit, grey, palette and alpha) and `orientation` (EXIF orientation in every format that has it).
 */
import zlib from 'node:zlib';
import sharp, { type Sharp } from 'sharp';
import { encodeBmp, encodeSunRaster, FORMAT_VARIANTS, type RawPixels, type SpecFormat } from './image-formats.ts';

export type HostileGroup =
  | 'bomb'
  | 'expanding'
  | 'truncated'
  | 'corrupt'
  | 'lying'
  | 'animated'
  | 'colour'
  | 'orientation';
export type HostileOutcome = 'too_large' | 'undecodable' | 'decoded' | 'either';

export type HostileImage = {
  /** Unique and URL-safe. */
  readonly name: string;
  readonly group: HostileGroup;
  readonly outcome: HostileOutcome;
  /** The spec format the bytes are, by their magic bytes (null: none); `decoded` files are read as this format. */
  readonly format: SpecFormat | null;
  /** For `decoded`: the size as displayed, after EXIF orientation. */
  readonly width: number;
  readonly height: number;
  /**
   * For `decoded`: what the picture shows. `source`: the source picture, upright; `grey`: its grey version;
   * `first-frame`: the source, though later frames show something else; `blank`: one flat colour; absent: other.
   */
  readonly shows?: 'source' | 'grey' | 'first-frame' | 'blank';
  /** What the fixture server says the file is: a lie for the `lying` group. */
  readonly contentType: string;
  readonly bytes: Uint8Array;
};

/** Sides of the bombs: far over the spec's 40 megapixels, and the largest JPEG and WebP decoders accept. */
const BOMB_SIDE = 100_000;
const JPEG_MAX_SIDE = 65_500;
const WEBP_MAX_SIDE = 16_383;
/** 8000 x 5000: exactly the spec's 40 megapixels. */
const FULL_WIDTH = 8000;
const FULL_HEIGHT = 5000;
/** The longest side the service accepts (JPEG's and GIF's largest). */
const MAX_SIDE = 65_535;

/** The test image the tests make their hostile files of: 500x333, a pot and a glass to detect. */
export const HOSTILE_SOURCE = 'opencv-doc_plant.jpg';

/** An image file's pixels as sharp decodes them, e.g. for hostileImages. */
export async function rawPixels(bytes: Uint8Array): Promise<RawPixels> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels as 3 | 4 };
}

/** Every hostile file made from `source` (an opaque RGB picture of at least 100 px each way works best). */
export async function hostileImages(source: RawPixels): Promise<HostileImage[]> {
  const groups = [bombs, damaged, lying, animated, colour, orientation].map((group) => group(source));
  return (await Promise.all([...groups, expanding()])).flat();
}

const CONTENT_TYPES: Record<SpecFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  tiff: 'image/tiff',
  bmp: 'image/bmp',
  pnm: 'image/x-portable-anymap',
  sunraster: 'image/x-sun-raster',
};

function refused(
  group: HostileGroup,
  name: string,
  outcome: 'too_large' | 'undecodable' | 'either',
  format: SpecFormat | null,
  bytes: Uint8Array,
): HostileImage {
  const contentType = format ? CONTENT_TYPES[format] : 'application/octet-stream';
  return { name, group, outcome, format, width: 0, height: 0, contentType, bytes };
}

function decoded(
  group: HostileGroup,
  name: string,
  format: SpecFormat,
  size: { width: number; height: number },
  shows: HostileImage['shows'],
  bytes: Uint8Array,
): HostileImage {
  const { width, height } = size;
  return { name, group, outcome: 'decoded', format, width, height, shows, contentType: CONTENT_TYPES[format], bytes };
}

const fromRaw = ({ data, width, height, channels }: RawPixels): Sharp =>
  sharp(data, { raw: { width, height, channels } });

const encode = async (image: Sharp): Promise<Uint8Array> => new Uint8Array(await image.toBuffer());

// ---------------------------------------------------------------------------
// Byte surgery

const u16be = (bytes: Uint8Array, at: number): number => (bytes[at]! << 8) | bytes[at + 1]!;

function setU24le(data: DataView, at: number, value: number): void {
  data.setUint16(at, value & 0xffff, true);
  data.setUint8(at + 2, value >>> 16);
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Offsets of a JPEG's marker segments before its first scan: [marker, offset of the 0xff]. */
function jpegSegments(bytes: Uint8Array): [number, number][] {
  const segments: [number, number][] = [];
  let at = 2;
  while (at + 4 <= bytes.length && bytes[at] === 0xff) {
    const marker = bytes[at + 1]!;
    segments.push([marker, at]);
    if (marker === 0xda) break;
    at += 2 + u16be(bytes, at + 2);
  }
  return segments;
}

/** A copy whose JPEG frame header (SOFn) declares width x height. */
function patchJpegSize(jpeg: Uint8Array, width: number, height: number): Uint8Array {
  const out = jpeg.slice();
  const sof = jpegSegments(out).find(([marker]) => marker >= 0xc0 && marker <= 0xc2);
  if (!sof) throw new Error('no SOF0-2 marker');
  view(out).setUint16(sof[1] + 5, height);
  view(out).setUint16(sof[1] + 7, width);
  return out;
}

/** Offset of a WebP's first chunk of that type. */
function webpChunk(webp: Uint8Array, type: string): number {
  for (let at = 12; at + 8 <= webp.length; at += 8 + ((view(webp).getUint32(at + 4, true) + 1) & ~1)) {
    if (String.fromCharCode(...webp.subarray(at, at + 4)) === type) return at;
  }
  throw new Error(`no ${type} chunk`);
}

/** A copy whose GIF logical screen and first image descriptor declare width x height. */
function patchGifSize(gif: Uint8Array, width: number, height: number): Uint8Array {
  const out = gif.slice();
  view(out).setUint16(6, width, true);
  view(out).setUint16(8, height, true);
  const flags = out[10]!;
  let at = 13 + (flags & 0x80 ? 3 << ((flags & 7) + 1) : 0);
  while (out[at] === 0x21) {
    at += 2; // extension introducer and label, then sub-blocks until an empty one
    while (out[at]! > 0) at += out[at]! + 1;
    at++;
  }
  if (out[at] !== 0x2c) throw new Error('no GIF image descriptor');
  view(out).setUint16(at + 5, width, true);
  view(out).setUint16(at + 7, height, true);
  return out;
}

/** The TIFF's first IFD entries with that tag, as [offset of the entry, little-endian]. */
function tiffEntries(tiff: Uint8Array, tag: number): { at: number; le: boolean }[] {
  const le = tiff[0] === 0x49;
  const data = view(tiff);
  const ifd = data.getUint32(4, le);
  const entries = data.getUint16(ifd, le);
  const found: { at: number; le: boolean }[] = [];
  for (let i = 0; i < entries; i++) {
    const at = ifd + 2 + i * 12;
    if (data.getUint16(at, le) === tag) found.push({ at, le });
  }
  return found;
}

/** A copy whose ImageWidth and ImageLength (and RowsPerStrip) are these LONGs. */
function patchTiffSize(tiff: Uint8Array, width: number, height: number): Uint8Array {
  const out = tiff.slice();
  const data = view(out);
  for (const [tag, value] of [[256, width], [257, height], [278, height]] as const) {
    for (const { at, le } of tiffEntries(out, tag)) {
      data.setUint16(at + 2, 4, le);
      data.setUint32(at + 4, 1, le);
      data.setUint32(at + 8, value, le);
    }
  }
  return out;
}

/** A PNG chunk: length, type, data, CRC-32. */
function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(zlib.crc32(body), body.length + 4);
  return out;
}

/** A PNG with this IHDR (bit depth, colour type), `more` chunks, then this zlib stream as its one IDAT. */
function pngFile(width: number, height: number, depth: number, colour: number, idat: Uint8Array, more: Buffer[] = []) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([depth, colour, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const end = pngChunk('IEND', new Uint8Array(0));
  return Buffer.concat([signature, pngChunk('IHDR', ihdr), ...more, pngChunk('IDAT', idat), end]);
}

/** The PNG's chunks as [type, offset of the chunk]. */
function pngChunks(png: Uint8Array): [string, number][] {
  const chunks: [string, number][] = [];
  for (let at = 8; at + 8 <= png.length; at += 12 + view(png).getUint32(at)) {
    chunks.push([String.fromCharCode(...png.subarray(at + 4, at + 8)), at]);
  }
  return chunks;
}

const ZERO_BLOCK = 16 << 20;
let zeroBlock: Buffer | undefined;

/**
 * A zlib stream of `count` zero bytes in about count / 1000 bytes, made without deflating them all: full-flushed
 * deflate blocks of 16 MiB of zeros need no history, so one such run can be repeated.
 */
function zlibOfZeros(count: number): Uint8Array {
  zeroBlock ??= zlib.deflateRawSync(Buffer.alloc(ZERO_BLOCK), { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH });
  const parts: Buffer[] = [Buffer.from([0x78, 0xda])];
  let left = count;
  for (; left >= ZERO_BLOCK; left -= ZERO_BLOCK) parts.push(zeroBlock);
  parts.push(zlib.deflateRawSync(Buffer.alloc(left), { level: 9 }));
  const adler32 = Buffer.alloc(4);
  // Adler-32 of zeros: the sum of ones stays 1, the sum of sums is the count.
  adler32.writeUInt32BE((((count % 65521) << 16) | 1) >>> 0);
  parts.push(adler32);
  return Buffer.concat(parts);
}

type TiffEntry = readonly [tag: number, type: 3 | 4, values: readonly number[]];

/** A little-endian TIFF of one IFD and one strip: SHORT (3) and LONG (4) entries; StripOffsets (273) is filled in. */
function tiffFile(entries: readonly TiffEntry[], strip: Uint8Array): Uint8Array {
  const ifdAt = 8;
  const valuesAt = ifdAt + 2 + entries.length * 12 + 4;
  // Values of more than 4 bytes lie after the IFD, the strip after them.
  const sizes = entries.map(([, type, values]) => values.length * (type === 3 ? 2 : 4));
  const stripAt = valuesAt + sizes.reduce((total, size) => total + (size > 4 ? size : 0), 0);
  const out = Buffer.alloc(stripAt + strip.length);
  out.write('II*\0', 0, 'latin1');
  out.writeUInt32LE(ifdAt, 4);
  out.writeUInt16LE(entries.length, ifdAt);
  let next = valuesAt;
  entries.forEach(([tag, type, values], i) => {
    const at = ifdAt + 2 + i * 12;
    const size = type === 3 ? 2 : 4;
    out.writeUInt16LE(tag, at);
    out.writeUInt16LE(type, at + 2);
    out.writeUInt32LE(values.length, at + 4);
    let target = at + 8;
    if (values.length * size > 4) {
      out.writeUInt32LE(next, at + 8);
      target = next;
      next += values.length * size;
    }
    values.forEach((value, k) => {
      const written = tag === 273 ? stripAt : value;
      if (size === 2) out.writeUInt16LE(written, target + 2 * k);
      else out.writeUInt32LE(written, target + 4 * k);
    });
  });
  out.set(strip, stripAt);
  return out;
}

/** EXIF data (a big-endian TIFF structure) whose first IFD holds one entry: Orientation. */
function exifOrientation(orientation: number): Buffer {
  const tiff = Buffer.alloc(8 + 2 + 12 + 4);
  tiff.write('MM\0*', 0, 'latin1');
  tiff.writeUInt32BE(8, 4);
  tiff.writeUInt16BE(1, 8);
  tiff.writeUInt16BE(0x0112, 10);
  tiff.writeUInt16BE(3, 12);
  tiff.writeUInt32BE(1, 14);
  tiff.writeUInt16BE(orientation, 18);
  return tiff;
}

/** A JPEG with an APP1 Exif segment holding this orientation right after SOI. */
function withJpegOrientation(jpeg: Uint8Array, orientation: number): Uint8Array {
  const body = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exifOrientation(orientation)]);
  const header = Buffer.from([0xff, 0xe1, 0, 0]);
  header.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), header, body, jpeg.subarray(2)]);
}

// ---------------------------------------------------------------------------
// The groups

/** A few KB declaring BOMB_SIDE x BOMB_SIDE (or the format's largest), every format. */
async function bombs(source: RawPixels): Promise<HostileImage[]> {
  const small = await fromRaw(source).resize(16, 16).raw().toBuffer({ resolveWithObject: true });
  const seed = fromRaw({ data: small.data, width: 16, height: 16, channels: small.info.channels as 3 | 4 });
  const [jpeg, progressive, gif, lossless, lossy, extended, tiff] = await Promise.all([
    encode(seed.clone().jpeg()),
    encode(seed.clone().jpeg({ progressive: true })),
    encode(seed.clone().gif()),
    encode(seed.clone().webp({ lossless: true })),
    encode(seed.clone().webp()),
    encode(seed.clone().ensureAlpha(0.5).webp()),
    encode(seed.clone().tiff({ compression: 'deflate' })),
  ]);
  const webp = (bytes: Uint8Array, patch: (data: DataView) => void): Uint8Array => {
    const out = bytes.slice();
    patch(view(out));
    return out;
  };
  const sun = encodeSunRaster({ data: small.data, width: 16, height: 16, channels: 3 }, { type: 'rle' });
  view(sun).setUint32(4, BOMB_SIDE);
  view(sun).setUint32(8, BOMB_SIDE);
  const bmp = encodeBmp({ data: small.data, width: 16, height: 16, channels: 3 });
  view(bmp).setInt32(18, BOMB_SIDE, true);
  view(bmp).setInt32(22, BOMB_SIDE, true);
  const pnm = Buffer.concat([Buffer.from(`P6\n${BOMB_SIDE} ${BOMB_SIDE}\n255\n`), Buffer.alloc(4096)]);
  const bomb = (name: string, format: SpecFormat, bytes: Uint8Array) =>
    refused('bomb', `bomb-${name}`, 'too_large', format, bytes);
  const fullLine = FULL_WIDTH * FULL_HEIGHT;
  return [
    // A real deflate stream: 4 KB that would inflate to 4 MiB, were the decoder to start.
    bomb('png', 'png', pngFile(BOMB_SIDE, BOMB_SIDE, 8, 2, zlibOfZeros(4 << 20))),
    bomb('jpeg', 'jpeg', patchJpegSize(jpeg, JPEG_MAX_SIDE, JPEG_MAX_SIDE)),
    bomb('jpeg-progressive', 'jpeg', patchJpegSize(progressive, JPEG_MAX_SIDE, JPEG_MAX_SIDE)),
    bomb('gif', 'gif', patchGifSize(gif, 0xffff, 0xffff)),
    // VP8L: 14-bit sizes minus one; VP8: 14-bit sizes; VP8X: 24-bit canvas sizes minus one.
    bomb('webp-lossless', 'webp', webp(lossless, (data) => {
      const flags = data.getUint32(21, true) & 0xf0000000;
      data.setUint32(21, ((WEBP_MAX_SIDE - 1) * 0x4001 + flags) >>> 0, true);
    })),
    bomb('webp-lossy', 'webp', webp(lossy, (data) => {
      for (const at of [26, 28]) data.setUint16(at, WEBP_MAX_SIDE, true);
    })),
    bomb('webp-extended', 'webp', webp(extended, (data) => {
      for (const at of [24, 27]) setU24le(data, at, WEBP_MAX_SIDE - 1);
      // The VP8 frame inside must agree with the canvas.
      const frame = webpChunk(extended, 'VP8 ') + 8;
      for (const at of [frame + 6, frame + 8]) data.setUint16(at, WEBP_MAX_SIDE, true);
    })),
    bomb('tiff', 'tiff', patchTiffSize(tiff, BOMB_SIDE, BOMB_SIDE)),
    // 40 MP exactly, but as one line: over the longest side accepted.
    bomb('png-line', 'png', pngFile(fullLine, 1, 8, 2, zlibOfZeros(fullLine * 3 + 1))),
    bomb('png-column', 'png', pngFile(1, fullLine, 8, 2, zlibOfZeros(fullLine * 4))),
    bomb('bmp', 'bmp', bmp),
    bomb('pnm', 'pnm', pnm),
    bomb('sunraster', 'sunraster', sun),
  ];
}

/** Small files whose data inflates far beyond their size: to gigabytes past a small declared size, or to 40 MP. */
async function expanding(): Promise<HostileImage[]> {
  const flat = () => sharp({ create: { width: FULL_WIDTH, height: FULL_HEIGHT, channels: 3, background: '#4a7f9c' } });
  const full = { width: FULL_WIDTH, height: FULL_HEIGHT };
  // One after the other: sharp takes half a gigabyte to write each.
  const gif = await encode(flat().gif());
  const webp = await encode(flat().webp({ lossless: true }));
  const progressive = await encode(flat().jpeg({ progressive: true, chromaSubsampling: '4:4:4' }));
  // PNG rows start with a filter byte.
  const rowsOfZeros = (bytesPerRow: number, rows: number): Uint8Array => zlibOfZeros((bytesPerRow + 1) * rows);
  const small = { width: 200, height: 200 };
  const widest = { width: MAX_SIDE, height: 610 };
  const sides = ({ width, height }: typeof full): [number, number] => [width, height];
  // 16-bit RGBA (8 bytes a pixel: 320 MB at 40 MP), deflated, in one strip.
  const tiff = (width: number, height: number, strip: Uint8Array) =>
    tiffFile(
      [
        [256, 4, [width]],
        [257, 4, [height]],
        [258, 3, [16, 16, 16, 16]],
        [259, 3, [8]],
        [262, 3, [2]],
        [273, 4, [0]],
        [277, 3, [4]],
        [278, 4, [height]],
        [279, 4, [strip.length]],
        [284, 3, [1]],
        [338, 3, [2]],
      ],
      strip,
    );
  const item = (name: string, format: SpecFormat, size: typeof full, bytes: Uint8Array) =>
    decoded('expanding', `expanding-${name}`, format, size, 'blank', bytes);
  const ancillary = (type: string, keyword: string) =>
    pngChunk(type, Buffer.concat([Buffer.from(`${keyword}\0\0`, 'latin1'), zlibOfZeros(1 << 30)]));
  return [
    // Declared 200x200; the IDAT inflates to 1 GiB, of which the decoder needs 120 KB.
    item('png-idat', 'png', small, pngFile(200, 200, 8, 2, zlibOfZeros(1 << 30))),
    // Ancillary chunks that inflate to 1 GiB each: a text comment and an ICC profile.
    item('png-ztxt', 'png', small, pngFile(200, 200, 8, 2, rowsOfZeros(600, 200), [ancillary('zTXt', 'Comment')])),
    item('png-iccp', 'png', small, pngFile(200, 200, 8, 2, rowsOfZeros(600, 200), [ancillary('iCCP', 'icc')])),
    item('tiff-strip', 'tiff', small, tiff(200, 200, zlibOfZeros(1 << 30))),
    // Exactly 40 MP in a few hundred KB.
    item('png-40mp-rgba16', 'png', full, pngFile(...sides(full), 16, 6, rowsOfZeros(FULL_WIDTH * 8, FULL_HEIGHT))),
    item('tiff-40mp-rgba16', 'tiff', full, tiff(FULL_WIDTH, FULL_HEIGHT, zlibOfZeros(FULL_WIDTH * FULL_HEIGHT * 8))),
    item('gif-40mp', 'gif', full, gif),
    item('webp-40mp', 'webp', full, webp),
    item('jpeg-40mp-progressive', 'jpeg', full, progressive),
    // 40 MP at the longest side accepted.
    item('png-65535-wide', 'png', widest, pngFile(...sides(widest), 8, 2, rowsOfZeros(MAX_SIDE * 3, widest.height))),
  ];
}

/** The formats damaged: FORMAT_VARIANTS by name, and a progressive JPEG. */
const DAMAGED_VARIANTS = [
  'jpeg',
  'png',
  'gif',
  'webp',
  'webp-lossless',
  'tiff-jpeg',
  'tiff-lzw',
  'bmp-24',
  'bmp-8-rle',
  'ppm',
  'pgm-ascii',
  'sun-24',
  'sun-8-rle',
];
/** Where files are cut: after 20 bytes (inside every header, named `header`), and at these shares of their length. */
const CUT_SHARES = [0.25, 0.5, 0.9];

async function damaged(source: RawPixels): Promise<HostileImage[]> {
  const files: [string, SpecFormat, Uint8Array][] = await Promise.all(
    DAMAGED_VARIANTS.map(async (name) => {
      const variant = FORMAT_VARIANTS.find((candidate) => candidate.name === name)!;
      return [name, variant.format, await variant.encode(source)] as [string, SpecFormat, Uint8Array];
    }),
  );
  files.push(['jpeg-progressive', 'jpeg', await encode(fromRaw(source).jpeg({ progressive: true }))]);
  return files.flatMap(([name, format, bytes]) => {
    const cuts: [string, number][] = [['header', 20]];
    for (const share of CUT_SHARES) cuts.push([`${share * 100}`, Math.floor(bytes.length * share)]);
    const truncated = cuts.map(([at, length]) =>
      refused('truncated', `truncated-${name}-${at}`, 'undecodable', format, bytes.slice(0, length)),
    );
    // Every 5th byte of the header (after the magic) inverted; one byte in every 499 of the data inverted.
    const header = bytes.slice();
    for (let at = 8; at < Math.min(64, header.length); at += 5) header[at]! ^= 0xff;
    const data = bytes.slice();
    for (let at = Math.floor(data.length / 3); at < data.length; at += 499) data[at]! ^= 0xff;
    return [
      ...truncated,
      refused('corrupt', `corrupt-${name}-header`, 'either', format, header),
      refused('corrupt', `corrupt-${name}-data`, 'either', format, data),
    ];
  });
}

async function lying(source: RawPixels): Promise<HostileImage[]> {
  const [png, jpeg] = await Promise.all([encode(fromRaw(source).png()), encode(fromRaw(source).jpeg({ quality: 95 }))]);
  const { width, height } = source;
  const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect/></svg>`);
  return [
    { ...decoded('lying', 'lying-png-as-jpeg', 'png', source, 'source', png), contentType: 'image/jpeg' },
    { ...decoded('lying', 'lying-jpeg-as-png', 'jpeg', source, 'source', jpeg), contentType: 'image/png' },
    // A format libvips reads but the spec does not list.
    { ...refused('lying', 'lying-svg-as-png', 'undecodable', null, svg), contentType: 'image/png' },
  ];
}

/** The second frame of the animated files: one flat colour, nothing like the first. */
export const SECOND_FRAME_COLOUR = '#c03020';

/** Two frames: the source, then SECOND_FRAME_COLOUR. */
async function animated(source: RawPixels): Promise<HostileImage[]> {
  const { width, height } = source;
  const first = await fromRaw(source).removeAlpha().raw().toBuffer();
  const flat = { width, height, channels: 3, background: SECOND_FRAME_COLOUR } as const;
  const second = await sharp({ create: flat }).raw().toBuffer();
  const frames = () =>
    sharp(Buffer.concat([first, second]), { raw: { width, height: height * 2, channels: 3, pageHeight: height } });
  const delay = [100, 100];
  const [gif, webp] = await Promise.all([
    encode(frames().gif({ loop: 0, delay })),
    encode(frames().webp({ quality: 95, delay })),
  ]);
  return [
    decoded('animated', 'animated-gif', 'gif', source, 'first-frame', gif),
    decoded('animated', 'animated-webp', 'webp', source, 'first-frame', webp),
  ];
}

/** The colour models and depths sharp's formats allow, each of the source picture. */
async function colour(source: RawPixels): Promise<HostileImage[]> {
  const image = () => fromRaw(source).removeAlpha();
  const files = await Promise.all([
    encode(image().toColourspace('cmyk').jpeg({ quality: 95 })),
    encode(image().toColourspace('cmyk').tiff({ compression: 'lzw' })),
    encode(image().toColourspace('rgb16').png()),
    encode(image().ensureAlpha(1).toColourspace('rgb16').png()),
    encode(image().toColourspace('rgb16').tiff({ compression: 'deflate' })),
    encode(image().toColourspace('grey16').png()),
    encode(image().greyscale().png()),
    encode(image().greyscale().ensureAlpha(1).png()),
    encode(image().greyscale().jpeg({ quality: 95 })),
    encode(image().png({ palette: true, colours: 256, dither: 0 })),
    encode(image().ensureAlpha(1).png({ palette: true, colours: 256, dither: 0 })),
  ]);
  const names: [string, SpecFormat, 'source' | 'grey'][] = [
    ['jpeg-cmyk', 'jpeg', 'source'],
    ['tiff-cmyk', 'tiff', 'source'],
    ['png-rgb16', 'png', 'source'],
    ['png-rgba16', 'png', 'source'],
    ['tiff-rgb16', 'tiff', 'source'],
    ['png-grey16', 'png', 'grey'],
    ['png-grey', 'png', 'grey'],
    ['png-grey-alpha', 'png', 'grey'],
    ['jpeg-grey', 'jpeg', 'grey'],
    ['png-palette', 'png', 'source'],
    ['png-palette-alpha', 'png', 'source'],
  ];
  return names.map(([name, format, shows], i) => decoded('colour', `colour-${name}`, format, source, shows, files[i]!));
}

/**
 * The source stored turned or mirrored so that each EXIF orientation (1-8) shows it upright, in JPEG; orientation 6
 * in PNG (eXIf), WebP (EXIF chunk) and TIFF (the Orientation tag); and values outside 1-8, which mean none.
 */
async function orientation(source: RawPixels): Promise<HostileImage[]> {
  // What to do to the upright picture so that orientation n shows it upright: the inverse of n's transform, one step
  // at a time (sharp would reorder a rotation and a mirroring within one pipeline).
  const steps: Record<number, ((image: Sharp) => Sharp)[]> = {
    1: [],
    2: [(image) => image.flop()],
    3: [(image) => image.rotate(180)],
    4: [(image) => image.flip()],
    5: [(image) => image.rotate(90), (image) => image.flop()],
    6: [(image) => image.rotate(-90)],
    7: [(image) => image.rotate(-90), (image) => image.flop()],
    8: [(image) => image.rotate(90)],
  };
  const storedAs = async (n: number): Promise<Sharp> => {
    let pixels = source;
    for (const step of steps[n]!) {
      const { data, info } = await step(fromRaw(pixels)).raw().toBuffer({ resolveWithObject: true });
      pixels = { data, width: info.width, height: info.height, channels: info.channels as 3 | 4 };
    }
    return fromRaw(pixels);
  };
  const upright = { width: source.width, height: source.height };
  const jpegs = await Promise.all(
    Object.keys(steps).map(async (key) => {
      const n = Number(key);
      const jpeg = await encode((await storedAs(n)).jpeg({ quality: 95 }));
      return decoded('orientation', `orientation-jpeg-${n}`, 'jpeg', upright, 'source', withJpegOrientation(jpeg, n));
    }),
  );
  const turned = await storedAs(6);
  const [png, webp, tiff, plain] = await Promise.all([
    encode(turned.clone().withMetadata({ orientation: 6 }).png()),
    encode(turned.clone().withMetadata({ orientation: 6 }).webp({ quality: 95 })),
    encode(turned.clone().withMetadata({ orientation: 6 }).tiff({ compression: 'lzw' })),
    encode(fromRaw(source).jpeg({ quality: 95 })),
  ]);
  // The PNG's eXIf moved past the pixels: decoders read it only before IDAT, so it means nothing there.
  const chunks = pngChunks(png);
  const exif = chunks.find(([type]) => type === 'eXIf')!;
  const end = chunks.find(([type]) => type === 'IEND')!;
  const exifBytes = png.subarray(exif[1], chunks[chunks.indexOf(exif) + 1]![1]);
  const lateExif = Buffer.concat([
    png.subarray(0, exif[1]),
    png.subarray(exif[1] + exifBytes.length, end[1]),
    exifBytes,
    png.subarray(end[1]),
  ]);
  const storedTurned = { width: source.height, height: source.width };
  return [
    ...jpegs,
    decoded('orientation', 'orientation-png-6', 'png', upright, 'source', png),
    decoded('orientation', 'orientation-webp-6', 'webp', upright, 'source', webp),
    decoded('orientation', 'orientation-tiff-6', 'tiff', upright, 'source', tiff),
    decoded('orientation', 'orientation-png-6-after-idat', 'png', storedTurned, undefined, lateExif),
    ...[0, 9, 0xffff].map((n) =>
      decoded('orientation', `orientation-jpeg-invalid-${n}`, 'jpeg', upright, 'source', withJpegOrientation(plain, n)),
    ),
  ];
}
