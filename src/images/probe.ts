/**
 * Reads an image's format and dimensions from its header bytes, never decoding pixels: a Worker has 128 MB, and a
 * 40-megapixel image decoded would not fit. The format is told by magic bytes, whatever the URL's extension says.
 * Sizes are as displayed: where EXIF orientation turns the picture a quarter (JPEG, PNG, WebP, TIFF), width and
 * height are swapped, as the inference service reports them and places its boxes.
 */

export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'bmp' | 'webp' | 'pnm' | 'sunraster' | 'tiff';
export type ImageInfo = { format: ImageFormat; width: number; height: number };

/** docs/api.md, Images and metadata: at least 100 px in one direction, at most 40 megapixels. */
export const MIN_IMAGE_SIDE = 100;
export const MAX_IMAGE_PIXELS = 40_000_000;
/**
 * The longest side accepted: JPEG's and GIF's largest, as in the inference service. Decoders' row buffers grow with
 * the width (a 40 KB PNG of 40,000,000 x 1 takes a gigabyte to decode) and their costs per row with the height, so
 * a 40 MP image may not be a single line.
 */
export const MAX_IMAGE_SIDE = 65_535;

export const hasSupportedDimensions = ({ width, height }: ImageInfo): boolean =>
  Math.min(width, height) >= 1 &&
  Math.max(width, height) >= MIN_IMAGE_SIDE &&
  Math.max(width, height) <= MAX_IMAGE_SIDE &&
  width * height <= MAX_IMAGE_PIXELS;

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0): boolean =>
  signature.every((byte, i) => bytes[at + i] === byte);

const ascii = (bytes: Uint8Array, start: number, length: number): string =>
  String.fromCharCode(...bytes.subarray(start, start + length));

/** EXIF orientations 5-8 turn the picture a quarter (libvips, like browsers, reads any other value as 1). */
const turnsQuarter = (orientation: number | undefined): boolean =>
  orientation !== undefined && orientation >= 5 && orientation <= 8;

function displayed(format: ImageFormat, width: number, height: number, orientation: number | undefined): ImageInfo {
  return turnsQuarter(orientation) ? { format, width: height, height: width } : { format, width, height };
}

type Ifd0 = { width?: number; height?: number; orientation?: number };

/**
 * ImageWidth, ImageLength and Orientation from the first IFD of a TIFF structure (a TIFF file, or EXIF) lying in
 * [start, end); offsets count from `start`. Null when its header is not there.
 */
function readIfd0(view: DataView, start: number, end: number): Ifd0 | null {
  if (end > view.byteLength || start + 8 > end) return null;
  const order = view.getUint16(start);
  if (order !== 0x4949 && order !== 0x4d4d) return null;
  const littleEndian = order === 0x4949;
  const ifd = start + view.getUint32(start + 4, littleEndian);
  if (ifd + 2 > end) return null;
  const tags: Ifd0 = {};
  const entries = view.getUint16(ifd, littleEndian);
  for (let i = 0; i < entries && ifd + 2 + i * 12 + 12 <= end; i++) {
    const entry = ifd + 2 + i * 12;
    const tag = view.getUint16(entry, littleEndian);
    const type = view.getUint16(entry + 2, littleEndian);
    const value = type === 3 ? view.getUint16(entry + 8, littleEndian) : view.getUint32(entry + 8, littleEndian);
    if (tag === 256) tags.width = value;
    if (tag === 257) tags.height = value;
    if (tag === 274 && type === 3) tags.orientation = value;
  }
  return tags;
}

/** The orientation of the EXIF block of `length` bytes at `start`, with or without its `Exif\0\0` prefix. */
function exifOrientation(bytes: Uint8Array, view: DataView, start: number, length: number): number | undefined {
  const tiff = ascii(bytes, start, 6) === 'Exif\0\0' ? start + 6 : start;
  return readIfd0(view, tiff, Math.min(start + length, view.byteLength))?.orientation;
}

/** The first frame header (SOFn) gives the size; the first Exif APP1 before the scan, the orientation. */
function probeJpeg(bytes: Uint8Array, view: DataView): ImageInfo | null {
  let size: { width: number; height: number } | undefined;
  let exif: { orientation: number | undefined } | undefined;
  let offset = 2;
  while (offset + 9 < view.byteLength) {
    if (view.getUint8(offset) !== 0xff) break;
    const marker = view.getUint8(offset + 1);
    if (marker === 0xff) {
      while (bytes[offset + 1] === 0xff) offset++; // fill bytes
      continue;
    }
    // Standalone markers carry no length.
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) break; // start of scan, end of image: no header follows
    const length = view.getUint16(offset + 2);
    const isStartOfFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isStartOfFrame && !size) size = { height: view.getUint16(offset + 5), width: view.getUint16(offset + 7) };
    if (marker === 0xe1 && !exif && ascii(bytes, offset + 4, 6) === 'Exif\0\0') {
      exif = { orientation: exifOrientation(bytes, view, offset + 4, length - 2) };
    }
    offset += 2 + length;
  }
  return size ? displayed('jpeg', size.width, size.height, exif?.orientation) : null;
}

/** PNG chunk types as big-endian numbers. */
const PNG_CHUNK = { IHDR: 0x49484452, IDAT: 0x49444154, IEND: 0x49454e44, eXIf: 0x65584966 } as const;

/** IHDR gives the size; an eXIf chunk before the image data, the orientation (decoders ignore a later one). */
function probePng(bytes: Uint8Array, view: DataView): ImageInfo | null {
  if (view.byteLength < 24 || view.getUint32(12) !== PNG_CHUNK.IHDR) return null;
  let orientation: number | undefined;
  for (let chunk = 8; chunk + 8 <= view.byteLength; ) {
    const length = view.getUint32(chunk);
    const type = view.getUint32(chunk + 4);
    if (type === PNG_CHUNK.IDAT || type === PNG_CHUNK.IEND) break;
    if (type === PNG_CHUNK.eXIf) orientation = exifOrientation(bytes, view, chunk + 8, length);
    chunk += 12 + length;
  }
  return displayed('png', view.getUint32(16), view.getUint32(20), orientation);
}

function probeBmp(view: DataView): ImageInfo | null {
  if (view.byteLength < 26) return null;
  const headerSize = view.getUint32(14, true);
  if (headerSize === 12) return { format: 'bmp', width: view.getUint16(18, true), height: view.getUint16(20, true) };
  // Negative height means a top-down bitmap.
  return { format: 'bmp', width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)) };
}

/** The orientation of an extended WebP: its EXIF chunk, read only where the VP8X flags announce it. */
function webpOrientation(bytes: Uint8Array, view: DataView): number | undefined {
  const EXIF_FLAG = 0x08;
  if ((view.getUint8(20) & EXIF_FLAG) === 0) return undefined;
  const EXIF_CHUNK = 0x45584946;
  for (let chunk = 12; chunk + 8 <= view.byteLength; ) {
    const length = view.getUint32(chunk + 4, true);
    if (view.getUint32(chunk) === EXIF_CHUNK) return exifOrientation(bytes, view, chunk + 8, length);
    chunk += 8 + length + (length & 1);
  }
  return undefined;
}

function probeWebp(bytes: Uint8Array, view: DataView): ImageInfo | null {
  if (view.byteLength < 30) return null;
  const chunk = ascii(bytes, 12, 4);
  if (chunk === 'VP8 ' && startsWith(bytes, [0x9d, 0x01, 0x2a], 23)) {
    return { format: 'webp', width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff };
  }
  if (chunk === 'VP8L' && bytes[20] === 0x2f) {
    const bits = view.getUint32(21, true);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    const read24 = (at: number): number => view.getUint8(at) | (view.getUint8(at + 1) << 8) | (view.getUint8(at + 2) << 16);
    return displayed('webp', read24(24) + 1, read24(27) + 1, webpOrientation(bytes, view));
  }
  return null;
}

/** PBM/PGM/PPM (P1–P6): magic, then width and height as whitespace-separated decimals, with `#` comments. */
function probePnm(bytes: Uint8Array): ImageInfo | null {
  const header = ascii(bytes, 0, Math.min(bytes.byteLength, 1024)).replace(/#[^\n\r]*/g, ' ');
  const match = /^P[1-6]\s+(\d+)\s+(\d+)\s/.exec(header);
  return match ? { format: 'pnm', width: Number(match[1]), height: Number(match[2]) } : null;
}

function probeTiff(view: DataView): ImageInfo | null {
  const { width, height, orientation } = readIfd0(view, 0, view.byteLength) ?? {};
  return width && height ? displayed('tiff', width, height, orientation) : null;
}

/** The image's format and size as displayed, or null when the bytes are no supported image. */
export function probeImage(bytes: Uint8Array): ImageInfo | null {
  if (bytes.byteLength < 12) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return probeJpeg(bytes, view);
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return probePng(bytes, view);
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') {
    return { format: 'gif', width: view.getUint16(6, true), height: view.getUint16(8, true) };
  }
  if (ascii(bytes, 0, 2) === 'BM') return probeBmp(view);
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return probeWebp(bytes, view);
  if (/^P[1-6]\s/.test(ascii(bytes, 0, 3))) return probePnm(bytes);
  if (startsWith(bytes, [0x59, 0xa6, 0x6a, 0x95])) {
    return bytes.byteLength < 12 ? null : { format: 'sunraster', width: view.getUint32(4), height: view.getUint32(8) };
  }
  const isTiff = startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a]);
  if (isTiff) return probeTiff(view);
  return null;
}
