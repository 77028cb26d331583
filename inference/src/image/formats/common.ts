/**
 * What the pure-TypeScript decoders share: the decoded result, the error they
 * throw, the size limit and bounds-checked readers. Nothing here allocates
 * from a header value.
 */

export type RawFormat = 'bmp' | 'pnm' | 'sunraster';

/** 8-bit samples, row-major, top row first, no padding: RGB or RGBA (straight, not premultiplied, alpha). */
export type RawImage = {
  readonly width: number;
  readonly height: number;
  readonly channels: 3 | 4;
  readonly data: Uint8Array;
  readonly format: RawFormat;
};

export type DecodeOptions = {
  /** Largest accepted width * height; larger declared sizes throw `too_large` before any pixel is read. */
  readonly maxPixels?: number;
  /** Longest accepted side, checked the same way; no limit unless given. */
  readonly maxSide?: number;
};

/** The API's limit: 40 megapixels. */
export const DEFAULT_MAX_PIXELS = 40_000_000;

/**
 * - `truncated`: the bytes end before the header or the pixel data does;
 * - `corrupt`: a header field or the compressed data is impossible;
 * - `unsupported`: valid but a variant these decoders do not read (e.g. BMP with embedded JPEG);
 * - `too_large`: the declared size is over the pixel limit.
 */
export type FormatErrorKind = 'truncated' | 'corrupt' | 'unsupported' | 'too_large';

export class ImageFormatError extends Error {
  readonly kind: FormatErrorKind;
  readonly format: RawFormat;

  constructor(format: RawFormat, kind: FormatErrorKind, message: string) {
    super(`${format}: ${message}`);
    this.name = 'ImageFormatError';
    this.kind = kind;
    this.format = format;
  }
}

/**
 * Checks a declared size before anything is allocated from it: both sides
 * positive integers, width * height and the longer side within the limits.
 */
export function checkDimensions(format: RawFormat, width: number, height: number, options: DecodeOptions | undefined): void {
  if (!Number.isSafeInteger(width) || !Number.isSafeInteger(height) || width <= 0 || height <= 0) {
    throw new ImageFormatError(format, 'corrupt', `impossible size ${width}x${height}`);
  }
  const maxPixels = options?.maxPixels ?? DEFAULT_MAX_PIXELS;
  if (width * height > maxPixels) {
    throw new ImageFormatError(format, 'too_large', `${width}x${height} is more than ${maxPixels} pixels`);
  }
  const maxSide = options?.maxSide ?? Number.POSITIVE_INFINITY;
  if (Math.max(width, height) > maxSide) {
    throw new ImageFormatError(format, 'too_large', `${width}x${height} has a side over ${maxSide} pixels`);
  }
}

/** Bounds-checked reads over the input: every read past the end throws `truncated`. */
export class ByteReader {
  readonly bytes: Uint8Array;
  readonly format: RawFormat;
  private readonly view: DataView;

  constructor(format: RawFormat, bytes: Uint8Array) {
    this.format = format;
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get length(): number {
    return this.bytes.byteLength;
  }

  /** Throws `truncated` unless [offset, offset + count) lies inside the input. */
  need(offset: number, count: number, what: string): void {
    if (!(offset >= 0 && count >= 0 && offset + count <= this.bytes.byteLength)) {
      throw new ImageFormatError(this.format, 'truncated', `the file ends before the ${what}`);
    }
  }

  u8(offset: number, what: string): number {
    this.need(offset, 1, what);
    return this.view.getUint8(offset);
  }

  u16le(offset: number, what: string): number {
    this.need(offset, 2, what);
    return this.view.getUint16(offset, true);
  }

  u32le(offset: number, what: string): number {
    this.need(offset, 4, what);
    return this.view.getUint32(offset, true);
  }

  i32le(offset: number, what: string): number {
    this.need(offset, 4, what);
    return this.view.getInt32(offset, true);
  }

  u32be(offset: number, what: string): number {
    this.need(offset, 4, what);
    return this.view.getUint32(offset, false);
  }
}
