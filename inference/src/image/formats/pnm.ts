/**
 * Netpbm PBM/PGM/PPM: P1 (ASCII bits, 1 = black), P2 (ASCII grey), P3 (ASCII
 * RGB), P4 (packed bits, each row padded to a byte), P5 (binary grey), P6
 * (binary RGB). Samples are scaled from 0..maxval (1..65535) to 8 bits; with
 * maxval over 255 binary samples are 16-bit big-endian.
 *
 * Header: the magic, then width, height and (but for P1/P4) maxval as decimal
 * numbers separated by whitespace (space, TAB, CR, LF, VT, FF), where a `#`
 * starts a comment running to the end of the line. After the last number comes
 * exactly one whitespace character (or a comment, which ends with its newline,
 * as libnetpbm reads it) and then the raster. ASCII rasters may carry comments
 * too; P1 digits need no separators. Only the first image of a multi-image
 * file is read. Samples above maxval are clamped.
 */
import { ByteReader, checkDimensions, ImageFormatError, type DecodeOptions, type RawImage } from './common.ts';

const HASH = 0x23;
const ZERO = 0x30;
const NINE = 0x39;
/** Longest decimal a header number may have: 40 megapixels fit in 8 digits. */
const MAX_HEADER_DIGITS = 10;

/** `P1`-`P6` followed by whitespace or a comment. */
export function isPnm(bytes: Uint8Array): boolean {
  return (
    bytes.byteLength >= 3 &&
    bytes[0] === 0x50 &&
    bytes[1]! >= 0x31 &&
    bytes[1]! <= 0x36 &&
    (isWhitespace(bytes[2]!) || bytes[2] === HASH)
  );
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

export function decodePnm(bytes: Uint8Array, options?: DecodeOptions): RawImage {
  if (!isPnm(bytes)) throw new ImageFormatError('pnm', 'corrupt', 'no P1-P6 magic number');
  const kind = bytes[1]! - ZERO;
  const cursor = new Cursor(bytes);
  cursor.position = 2;
  const width = cursor.headerNumber('width');
  const height = cursor.headerNumber('height');
  const bitmap = kind === 1 || kind === 4;
  const maxval = bitmap ? 1 : cursor.headerNumber('maxval');
  if (maxval < 1 || maxval > 65535) throw new ImageFormatError('pnm', 'corrupt', `maxval ${maxval} is outside 1..65535`);
  checkDimensions('pnm', width, height, options);
  const colour = kind === 3 || kind === 6;
  const samples = width * height * (colour ? 3 : 1);

  if (kind >= 4) {
    cursor.endOfHeader();
    const start = cursor.position;
    if (kind === 4) return decodeP4(cursor.reader, start, width, height);
    const bytesPerSample = maxval > 255 ? 2 : 1;
    cursor.reader.need(start, samples * bytesPerSample, 'raster');
    return decodeBinary(bytes, start, width, height, colour, maxval, bytesPerSample);
  }

  // ASCII: every sample takes at least one character and, but for P1, one separator.
  const remaining = bytes.byteLength - cursor.position;
  if (remaining < (bitmap ? samples : 2 * samples - 1)) {
    throw new ImageFormatError('pnm', 'truncated', `${samples} samples cannot fit in the ${remaining} bytes left`);
  }
  return kind === 1 ? decodeP1(cursor, width, height) : decodeAscii(cursor, width, height, colour, maxval);
}

class Cursor {
  readonly bytes: Uint8Array;
  readonly reader: ByteReader;
  position = 0;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.reader = new ByteReader('pnm', bytes);
  }

  /** Skips whitespace and `#` comments. */
  skipSeparators(): void {
    const { bytes } = this;
    const length = bytes.byteLength;
    let p = this.position;
    while (p < length) {
      const c = bytes[p]!;
      if (isWhitespace(c)) {
        p++;
      } else if (c === HASH) {
        while (p < length && bytes[p] !== 0x0a && bytes[p] !== 0x0d) p++;
      } else {
        break;
      }
    }
    this.position = p;
  }

  headerNumber(what: string): number {
    this.skipSeparators();
    const { bytes } = this;
    let p = this.position;
    let value = 0;
    let digits = 0;
    while (p < bytes.byteLength && isDigit(bytes[p]!)) {
      if (++digits > MAX_HEADER_DIGITS) throw new ImageFormatError('pnm', 'corrupt', `the ${what} has too many digits`);
      value = value * 10 + bytes[p]! - ZERO;
      p++;
    }
    if (digits === 0) {
      if (p >= bytes.byteLength) throw new ImageFormatError('pnm', 'truncated', `the file ends before the ${what}`);
      throw new ImageFormatError('pnm', 'corrupt', `the ${what} is not a decimal number`);
    }
    this.position = p;
    return value;
  }

  /** The single whitespace character (or comment with its newline) between the header and a binary raster. */
  endOfHeader(): void {
    const { bytes } = this;
    const c = this.reader.u8(this.position, 'raster');
    if (c === HASH) {
      let p = this.position;
      while (p < bytes.byteLength && bytes[p] !== 0x0a && bytes[p] !== 0x0d) p++;
      this.position = p + 1;
    } else if (isWhitespace(c)) {
      this.position++;
    } else {
      throw new ImageFormatError('pnm', 'corrupt', 'no whitespace after the header');
    }
  }
}

/** 0..maxval to 0..255, rounded. */
function scaleTable(maxval: number): Uint8Array {
  const table = new Uint8Array(maxval + 1);
  for (let v = 0; v <= maxval; v++) table[v] = Math.round((v * 255) / maxval);
  return table;
}

function decodeP4(reader: ByteReader, start: number, width: number, height: number): RawImage {
  const rowBytes = Math.ceil(width / 8);
  reader.need(start, rowBytes * height, 'raster');
  const { bytes } = reader;
  const out = new Uint8Array(width * height * 3);
  let target = 0;
  for (let y = 0; y < height; y++) {
    const row = start + y * rowBytes;
    for (let x = 0; x < width; x++) {
      const grey = (bytes[row + (x >> 3)]! >> (7 - (x & 7))) & 1 ? 0 : 255;
      out[target++] = grey;
      out[target++] = grey;
      out[target++] = grey;
    }
  }
  return { width, height, channels: 3, data: out, format: 'pnm' };
}

function decodeBinary(
  bytes: Uint8Array,
  start: number,
  width: number,
  height: number,
  colour: boolean,
  maxval: number,
  bytesPerSample: 1 | 2,
): RawImage {
  const table = scaleTable(maxval);
  const samples = width * height * (colour ? 3 : 1);
  const out = new Uint8Array(width * height * 3);
  let p = start;
  let target = 0;
  for (let i = 0; i < samples; i++) {
    let value: number;
    if (bytesPerSample === 1) {
      value = bytes[p++]!;
    } else {
      value = (bytes[p]! << 8) | bytes[p + 1]!;
      p += 2;
    }
    const v = table[value > maxval ? maxval : value]!;
    target = putSample(out, target, v, colour);
  }
  return { width, height, channels: 3, data: out, format: 'pnm' };
}

/** Writes one sample: as it is for colour, spread over R, G and B for grey; returns the next write position. */
function putSample(out: Uint8Array, target: number, value: number, colour: boolean): number {
  out[target++] = value;
  if (!colour) {
    out[target++] = value;
    out[target++] = value;
  }
  return target;
}

function decodeP1(cursor: Cursor, width: number, height: number): RawImage {
  const out = new Uint8Array(width * height * 3);
  const pixels = width * height;
  let target = 0;
  for (let i = 0; i < pixels; i++) {
    cursor.skipSeparators();
    const c = cursor.bytes[cursor.position];
    if (c === undefined) throw new ImageFormatError('pnm', 'truncated', `the raster ends after ${i} of ${pixels} pixels`);
    if (c !== ZERO && c !== ZERO + 1) throw new ImageFormatError('pnm', 'corrupt', `a P1 pixel must be 0 or 1, not byte ${c}`);
    cursor.position++;
    const grey = c === ZERO ? 255 : 0;
    out[target++] = grey;
    out[target++] = grey;
    out[target++] = grey;
  }
  return { width, height, channels: 3, data: out, format: 'pnm' };
}

function decodeAscii(cursor: Cursor, width: number, height: number, colour: boolean, maxval: number): RawImage {
  const { bytes } = cursor;
  const length = bytes.byteLength;
  const table = scaleTable(maxval);
  const samples = width * height * (colour ? 3 : 1);
  const out = new Uint8Array(width * height * 3);
  let target = 0;
  for (let i = 0; i < samples; i++) {
    cursor.skipSeparators();
    let p = cursor.position;
    if (p >= length) throw new ImageFormatError('pnm', 'truncated', `the raster ends after ${i} of ${samples} samples`);
    let value = 0;
    const first = p;
    while (p < length && isDigit(bytes[p]!)) {
      if (value <= maxval) value = value * 10 + bytes[p]! - ZERO;
      p++;
    }
    if (p === first) throw new ImageFormatError('pnm', 'corrupt', `sample ${i} is not a decimal number`);
    cursor.position = p;
    const v = table[value > maxval ? maxval : value]!;
    target = putSample(out, target, v, colour);
  }
  return { width, height, channels: 3, data: out, format: 'pnm' };
}
