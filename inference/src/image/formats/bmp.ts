/**
 * BMP / DIB: the 14-byte `BM` file header, then a BITMAPCOREHEADER (12 bytes),
 * an OS/2 2.x header (16-64), BITMAPINFOHEADER (40, with the 52/56-byte
 * variants) or BITMAPV4HEADER/BITMAPV5HEADER (108/124).
 *
 * Read: 1/2/4/8-bit palettes, 16-bit (555 by default, or BI_BITFIELDS), 24-bit,
 * 32-bit (BI_RGB or BI_BITFIELDS / BI_ALPHABITFIELDS), bottom-up and top-down
 * (negative height), RLE8 and RLE4. Not read: embedded JPEG/PNG (BI_JPEG,
 * BI_PNG), OS/2 Huffman 1D and RLE24, 64-bit.
 *
 * Alpha: a 32-bit BI_RGB file's fourth byte, or an explicit alpha mask, is
 * used as alpha only when some pixel has a non-zero value there (as browsers
 * do): many writers leave that byte zero, which would otherwise make the whole
 * image transparent.
 */
import { ByteReader, checkDimensions, ImageFormatError, type DecodeOptions, type RawImage } from './common.ts';

const FILE_HEADER_SIZE = 14;
const BI_RGB = 0;
const BI_RLE8 = 1;
const BI_RLE4 = 2;
const BI_BITFIELDS = 3;
const BI_JPEG = 4;
const BI_PNG = 5;
const BI_ALPHABITFIELDS = 6;
const OS2_V2_HEADER_SIZE = 64;

/** `BM` plus room for the DIB header's size. */
export function isBmp(bytes: Uint8Array): boolean {
  return bytes.byteLength >= 2 && bytes[0] === 0x42 && bytes[1] === 0x4d;
}

type Header = {
  width: number;
  height: number;
  topDown: boolean;
  bitCount: number;
  compression: number;
  sizeImage: number;
  colorsUsed: number;
  /** Bytes per palette entry: 3 (BGR) in core headers, 4 (BGRX) otherwise. */
  paletteEntrySize: 3 | 4;
  /** Where the palette (or, without one, the pixels) would start. */
  paletteOffset: number;
  masks: Masks | undefined;
};

type Masks = { red: number; green: number; blue: number; alpha: number };

export function decodeBmp(bytes: Uint8Array, options?: DecodeOptions): RawImage {
  const reader = new ByteReader('bmp', bytes);
  if (!isBmp(bytes)) throw new ImageFormatError('bmp', 'corrupt', 'no BM signature');
  const header = readHeader(reader, options);
  const { width, height, bitCount, compression } = header;

  const palette = bitCount <= 8 ? readPalette(reader, header) : undefined;
  let dataOffset = reader.u32le(10, 'file header');
  if (dataOffset < header.paletteOffset) {
    // Some writers leave bfOffBits zero (or point it into the header); the pixels then follow the palette.
    // An offset past the end of the file is left to fail as truncated.
    dataOffset = header.paletteOffset + (palette ? palette.count * header.paletteEntrySize : 0);
  }

  if (palette && (compression === BI_RLE8 || compression === BI_RLE4)) {
    return decodeRle(reader, header, palette, dataOffset);
  }

  const stride = Math.floor((width * bitCount + 31) / 32) * 4;
  // The last row's padding is often missing; its pixels are not.
  reader.need(dataOffset, stride * (height - 1) + Math.ceil((width * bitCount) / 8), 'pixel data');

  if (palette) return decodePaletted(bytes, header, palette, dataOffset, stride);
  if (bitCount === 24) return decode24(bytes, header, dataOffset, stride);
  return decodeMasked(reader, header, dataOffset, stride);
}

function readHeader(reader: ByteReader, options: DecodeOptions | undefined): Header {
  const fail = (kind: 'corrupt' | 'unsupported', message: string) => new ImageFormatError('bmp', kind, message);
  const headerSize = reader.u32le(FILE_HEADER_SIZE, 'DIB header');
  const at = FILE_HEADER_SIZE;
  let header: Header;
  if (headerSize === 12) {
    // BITMAPCOREHEADER: 16-bit unsigned sizes, always bottom-up, BGR palette entries.
    reader.need(at, 12, 'BITMAPCOREHEADER');
    header = {
      width: reader.u16le(at + 4, 'header'),
      height: reader.u16le(at + 6, 'header'),
      topDown: false,
      bitCount: reader.u16le(at + 10, 'header'),
      compression: BI_RGB,
      sizeImage: 0,
      colorsUsed: 0,
      paletteEntrySize: 3,
      paletteOffset: at + 12,
      masks: undefined,
    };
  } else if (headerSize >= 16 && headerSize <= 124) {
    // BITMAPINFOHEADER and its successors; OS/2 2.x headers may stop after any field past the 16th byte.
    reader.need(at, headerSize, 'DIB header');
    const field = (offset: number): number => (offset + 4 <= headerSize ? reader.u32le(at + offset, 'header') : 0);
    const rawHeight = reader.i32le(at + 8, 'header');
    const compression = field(16);
    header = {
      width: reader.i32le(at + 4, 'header'),
      height: Math.abs(rawHeight),
      topDown: rawHeight < 0,
      bitCount: reader.u16le(at + 14, 'header'),
      compression,
      sizeImage: field(20),
      colorsUsed: field(32),
      paletteEntrySize: 4,
      paletteOffset: at + headerSize,
      masks: undefined,
    };
    if (headerSize === OS2_V2_HEADER_SIZE && (compression === BI_BITFIELDS || compression === BI_JPEG) && header.bitCount !== 16 && header.bitCount !== 32) {
      throw fail('unsupported', 'OS/2 Huffman 1D and RLE24 compression are not supported');
    }
    if (compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS) {
      // Masks sit right after the 40-byte part: inside a V2+ header, or following a plain BITMAPINFOHEADER.
      const hasAlphaMask = compression === BI_ALPHABITFIELDS || headerSize >= 56;
      const maskBytes = hasAlphaMask ? 16 : 12;
      reader.need(at + 40, maskBytes, 'colour masks');
      header.masks = {
        red: reader.u32le(at + 40, 'colour masks'),
        green: reader.u32le(at + 44, 'colour masks'),
        blue: reader.u32le(at + 48, 'colour masks'),
        alpha: hasAlphaMask ? reader.u32le(at + 52, 'colour masks') : 0,
      };
      if (headerSize < 40 + maskBytes) header.paletteOffset = at + 40 + maskBytes;
    }
  } else {
    throw fail('unsupported', `unknown DIB header size ${headerSize}`);
  }

  const { bitCount, compression } = header;
  if (![1, 2, 4, 8, 16, 24, 32].includes(bitCount)) throw fail('unsupported', `bit depth ${bitCount}`);
  if (compression === BI_JPEG || compression === BI_PNG) throw fail('unsupported', 'embedded JPEG/PNG data');
  const valid =
    compression === BI_RGB ||
    (compression === BI_RLE8 && bitCount === 8) ||
    (compression === BI_RLE4 && bitCount === 4) ||
    ((compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS) && (bitCount === 16 || bitCount === 32));
  if (!valid) throw fail('corrupt', `compression ${compression} with ${bitCount} bits per pixel`);
  checkDimensions('bmp', header.width, header.height, options);
  return header;
}

type Palette = { count: number; rgb: Uint8Array };

/** Up to 1 << bitCount entries as RGB; indices past the stored entries read black. */
function readPalette(reader: ByteReader, header: Header): Palette {
  const maxEntries = 1 << header.bitCount;
  let count = header.colorsUsed > 0 && header.colorsUsed < maxEntries ? header.colorsUsed : maxEntries;
  const dataOffset = reader.u32le(10, 'file header');
  // The palette ends where the pixels start (when bfOffBits is sane) or with the file.
  const end = dataOffset >= header.paletteOffset && dataOffset <= reader.length ? dataOffset : reader.length;
  count = Math.min(count, Math.floor(Math.max(0, end - header.paletteOffset) / header.paletteEntrySize));
  if (count === 0) throw new ImageFormatError('bmp', 'corrupt', `a ${header.bitCount}-bit image without a palette`);
  const rgb = new Uint8Array(256 * 3);
  const { bytes } = reader;
  for (let i = 0; i < count; i++) {
    const at = header.paletteOffset + i * header.paletteEntrySize;
    rgb[i * 3] = bytes[at + 2]!;
    rgb[i * 3 + 1] = bytes[at + 1]!;
    rgb[i * 3 + 2] = bytes[at]!;
  }
  return { count, rgb };
}

/** Output row of the i-th stored row. */
function outputRow(header: Header, storedRow: number): number {
  return header.topDown ? storedRow : header.height - 1 - storedRow;
}

function decodePaletted(bytes: Uint8Array, header: Header, palette: Palette, dataOffset: number, stride: number): RawImage {
  const { width, height, bitCount } = header;
  const out = new Uint8Array(width * height * 3);
  const colours = palette.rgb;
  const indexMask = (1 << bitCount) - 1;
  for (let row = 0; row < height; row++) {
    const source = dataOffset + row * stride;
    let target = outputRow(header, row) * width * 3;
    for (let x = 0; x < width; x++) {
      let index: number;
      if (bitCount === 8) {
        index = bytes[source + x]!;
      } else {
        const bit = x * bitCount;
        index = (bytes[source + (bit >> 3)]! >> (8 - bitCount - (bit & 7))) & indexMask;
      }
      out[target++] = colours[index * 3]!;
      out[target++] = colours[index * 3 + 1]!;
      out[target++] = colours[index * 3 + 2]!;
    }
  }
  return { width, height, channels: 3, data: out, format: 'bmp' };
}

function decode24(bytes: Uint8Array, header: Header, dataOffset: number, stride: number): RawImage {
  const { width, height } = header;
  const out = new Uint8Array(width * height * 3);
  for (let row = 0; row < height; row++) {
    let source = dataOffset + row * stride;
    let target = outputRow(header, row) * width * 3;
    for (let x = 0; x < width; x++, source += 3) {
      out[target++] = bytes[source + 2]!;
      out[target++] = bytes[source + 1]!;
      out[target++] = bytes[source]!;
    }
  }
  return { width, height, channels: 3, data: out, format: 'bmp' };
}

/** A channel mask as shift, width and scale to 8 bits. */
type Channel = { mask: number; shift: number; scale: number };

function channel(mask: number): Channel {
  mask >>>= 0;
  if (mask === 0) return { mask: 0, shift: 0, scale: 0 };
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  return { mask, shift, scale: 255 / (mask >>> shift) };
}

function decodeMasked(reader: ByteReader, header: Header, dataOffset: number, stride: number): RawImage {
  const { width, height, bitCount } = header;
  const masks: Masks =
    header.masks ??
    (bitCount === 16
      ? { red: 0x7c00, green: 0x03e0, blue: 0x001f, alpha: 0 }
      : { red: 0x00ff0000, green: 0x0000ff00, blue: 0x000000ff, alpha: 0xff000000 });
  const red = channel(masks.red);
  const green = channel(masks.green);
  const blue = channel(masks.blue);
  const alpha = channel(masks.alpha);
  const bytes = reader.bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bytesPerPixel = bitCount >> 3;
  const read = (at: number): number => (bytesPerPixel === 2 ? view.getUint16(at, true) : view.getUint32(at, true));

  // Alpha only when some pixel uses it (see the module comment).
  let hasAlpha = false;
  if (alpha.mask !== 0) {
    for (let row = 0; row < height && !hasAlpha; row++) {
      const source = dataOffset + row * stride;
      for (let x = 0; x < width; x++) {
        if ((read(source + x * bytesPerPixel) & alpha.mask) !== 0) {
          hasAlpha = true;
          break;
        }
      }
    }
  }
  const channels = hasAlpha ? 4 : 3;
  const out = new Uint8Array(width * height * channels);
  const sample = (value: number, c: Channel): number => Math.round((((value & c.mask) >>> 0) >>> c.shift) * c.scale);
  for (let row = 0; row < height; row++) {
    const source = dataOffset + row * stride;
    let target = outputRow(header, row) * width * channels;
    for (let x = 0; x < width; x++) {
      const value = read(source + x * bytesPerPixel);
      out[target++] = sample(value, red);
      out[target++] = sample(value, green);
      out[target++] = sample(value, blue);
      if (hasAlpha) out[target++] = sample(value, alpha);
    }
  }
  return { width, height, channels, data: out, format: 'bmp' };
}

/**
 * RLE8 / RLE4. Pixels the stream skips (deltas, early end of line) keep
 * palette entry 0. Runs past the right edge are clipped; data after the last
 * row is ignored. Every step consumes input, so a malformed stream ends when
 * the bytes do, as `truncated` unless all rows were reached.
 */
function decodeRle(reader: ByteReader, header: Header, palette: Palette, dataOffset: number): RawImage {
  const { width, height } = header;
  const fourBit = header.compression === BI_RLE4;
  const bytes = reader.bytes;
  const colours = palette.rgb;
  const out = new Uint8Array(width * height * 3);
  // Fill with palette entry 0.
  for (let i = 0; i < out.length; i += 3) {
    out[i] = colours[0]!;
    out[i + 1] = colours[1]!;
    out[i + 2] = colours[2]!;
  }
  const sizeImage = header.sizeImage;
  const end = sizeImage > 0 && dataOffset + sizeImage <= bytes.byteLength ? dataOffset + sizeImage : bytes.byteLength;
  let p = dataOffset;
  let x = 0;
  let y = 0;
  const put = (index: number): void => {
    if (x < width && y < height) {
      const target = (outputRow(header, y) * width + x) * 3;
      out[target] = colours[index * 3]!;
      out[target + 1] = colours[index * 3 + 1]!;
      out[target + 2] = colours[index * 3 + 2]!;
    }
    x++;
  };
  const corrupt = (message: string) => new ImageFormatError('bmp', 'corrupt', message);
  let ended = false;
  while (p + 1 < end) {
    const count = bytes[p]!;
    const value = bytes[p + 1]!;
    p += 2;
    if (count > 0) {
      // Encoded run; clipped at the right edge (x only grows to width + 255).
      const n = Math.min(count, Math.max(0, width - x));
      if (fourBit) {
        for (let i = 0; i < n; i++) put(i & 1 ? value & 0x0f : value >> 4);
      } else {
        for (let i = 0; i < n; i++) put(value);
      }
      x += count - n;
    } else if (value === 0) {
      x = 0;
      y++;
    } else if (value === 1) {
      ended = true;
      break;
    } else if (value === 2) {
      if (p + 1 >= end) throw new ImageFormatError('bmp', 'truncated', 'the RLE data ends inside a delta');
      x += bytes[p]!;
      y += bytes[p + 1]!;
      p += 2;
      if (x > width || y > height) throw corrupt(`an RLE delta moves outside the ${width}x${height} image`);
    } else {
      // Absolute run of `value` pixels, padded to a 16-bit boundary.
      const dataBytes = fourBit ? (value + 1) >> 1 : value;
      if (p + dataBytes > end) throw new ImageFormatError('bmp', 'truncated', 'the RLE data ends inside an absolute run');
      const n = Math.min(value, Math.max(0, width - x));
      for (let i = 0; i < n; i++) {
        put(fourBit ? (i & 1 ? bytes[p + (i >> 1)]! & 0x0f : bytes[p + (i >> 1)]! >> 4) : bytes[p + i]!);
      }
      x += value - n;
      p += dataBytes + (dataBytes & 1);
    }
    if (x > width + 255) throw corrupt('an RLE row runs far past the right edge');
  }
  if (!ended && !(y >= height || (y === height - 1 && x >= width))) {
    throw new ImageFormatError('bmp', 'truncated', `the RLE data ends at row ${y} of ${height}`);
  }
  return { width, height, channels: 3, data: out, format: 'bmp' };
}
