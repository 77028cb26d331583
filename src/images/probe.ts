/**
 * Reads an image's format and dimensions from its header bytes, never decoding pixels: a Worker has 128 MB, and a
 * 40-megapixel image decoded would not fit. The format is told by magic bytes, whatever the URL's extension says.
 */

export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'bmp' | 'webp' | 'pnm' | 'sunraster' | 'tiff';
export type ImageInfo = { format: ImageFormat; width: number; height: number };

/** Spec 2.1: at least 100 px in one direction, at most 40 megapixels. */
export const MIN_IMAGE_SIDE = 100;
export const MAX_IMAGE_PIXELS = 40_000_000;

export const hasSupportedDimensions = ({ width, height }: ImageInfo): boolean =>
  Math.max(width, height) >= MIN_IMAGE_SIDE && width * height <= MAX_IMAGE_PIXELS;

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0): boolean =>
  signature.every((byte, i) => bytes[at + i] === byte);

const ascii = (bytes: Uint8Array, start: number, length: number): string =>
  String.fromCharCode(...bytes.subarray(start, start + length));

function probeJpeg(view: DataView): ImageInfo | null {
  let offset = 2;
  while (offset + 9 < view.byteLength) {
    if (view.getUint8(offset) !== 0xff) return null;
    const marker = view.getUint8(offset + 1);
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    // Standalone markers carry no length.
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    const isStartOfFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isStartOfFrame) {
      return { format: 'jpeg', height: view.getUint16(offset + 5), width: view.getUint16(offset + 7) };
    }
    offset += 2 + view.getUint16(offset + 2);
  }
  return null;
}

function probeBmp(view: DataView): ImageInfo | null {
  if (view.byteLength < 26) return null;
  const headerSize = view.getUint32(14, true);
  if (headerSize === 12) return { format: 'bmp', width: view.getUint16(18, true), height: view.getUint16(20, true) };
  // Negative height means a top-down bitmap.
  return { format: 'bmp', width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)) };
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
    return { format: 'webp', width: read24(24) + 1, height: read24(27) + 1 };
  }
  return null;
}

/** PBM/PGM/PPM (P1–P6): magic, then width and height as whitespace-separated decimals, with `#` comments. */
function probePnm(bytes: Uint8Array): ImageInfo | null {
  const header = ascii(bytes, 0, Math.min(bytes.byteLength, 1024)).replace(/#[^\n\r]*/g, ' ');
  const match = /^P[1-6]\s+(\d+)\s+(\d+)\s/.exec(header);
  return match ? { format: 'pnm', width: Number(match[1]), height: Number(match[2]) } : null;
}

function probeTiff(view: DataView, littleEndian: boolean): ImageInfo | null {
  if (view.byteLength < 8) return null;
  const ifd = view.getUint32(4, littleEndian);
  if (ifd + 2 > view.byteLength) return null;
  const entries = view.getUint16(ifd, littleEndian);
  let width = 0;
  let height = 0;
  for (let i = 0; i < entries; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > view.byteLength) return null;
    const tag = view.getUint16(entry, littleEndian);
    const type = view.getUint16(entry + 2, littleEndian);
    const value = type === 3 ? view.getUint16(entry + 8, littleEndian) : view.getUint32(entry + 8, littleEndian);
    if (tag === 256) width = value;
    if (tag === 257) height = value;
  }
  return width && height ? { format: 'tiff', width, height } : null;
}

/** The image's format and size, or null when the bytes are no supported image. */
export function probeImage(bytes: Uint8Array): ImageInfo | null {
  if (bytes.byteLength < 12) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return probeJpeg(view);
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
    return bytes.byteLength < 24 ? null : { format: 'png', width: view.getUint32(16), height: view.getUint32(20) };
  }
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') {
    return { format: 'gif', width: view.getUint16(6, true), height: view.getUint16(8, true) };
  }
  if (ascii(bytes, 0, 2) === 'BM') return probeBmp(view);
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return probeWebp(bytes, view);
  if (/^P[1-6]\s/.test(ascii(bytes, 0, 3))) return probePnm(bytes);
  if (startsWith(bytes, [0x59, 0xa6, 0x6a, 0x95])) {
    return bytes.byteLength < 12 ? null : { format: 'sunraster', width: view.getUint32(4), height: view.getUint32(8) };
  }
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00])) return probeTiff(view, true);
  if (startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return probeTiff(view, false);
  return null;
}
