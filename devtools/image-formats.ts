/**
 * Writes test images in every format the spec accepts, from sharp's raw 8-bit
 * RGB/RGBA pixels: BMP/DIB, PBM/PGM/PPM (P1-P6) and Sun raster by hand here
 * (sharp cannot write them), JPEG, PNG, GIF, WebP and TIFF through sharp.
 *
 *   const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
 *   const image = { data, width: info.width, height: info.height, channels: info.channels as 3 | 4 };
 *   for (const variant of FORMAT_VARIANTS) await writeFile(`x.${variant.extension}`, await variant.encode(image));
 *
 * Each variant also says which pixels its file holds (`pixels`): the input
 * flattened onto white where the format has no alpha, made grey, quantised to
 * a palette or dithered to black and white. Decoding a lossless variant's file
 * gives exactly those pixels, so it can be compared with the same pixels as PNG.
 */
import sharp, { type Sharp } from 'sharp';

/** 8-bit samples, row-major, top row first, no padding; alpha straight (not premultiplied). */
export type RawPixels = {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: 3 | 4;
};

/** Format names as the Worker's header probe (src/images/probe.ts) and the inference service report them. */
export type SpecFormat = 'jpeg' | 'png' | 'gif' | 'bmp' | 'webp' | 'pnm' | 'sunraster' | 'tiff';

export type FormatVariant = {
  /** Unique, e.g. `bmp-rle8`, `ppm-ascii`. */
  readonly name: string;
  /** File name extension, without the dot. */
  readonly extension: string;
  readonly format: SpecFormat;
  /** True when decoding the file need not give `pixels(image)` exactly (JPEG, lossy WebP, GIF's own quantiser). */
  readonly lossy: boolean;
  /** The pixels the file holds, before any lossy compression. */
  pixels(image: RawPixels): RawPixels;
  encode(image: RawPixels): Promise<Uint8Array>;
};

// ---------------------------------------------------------------------------
// Pixel reductions

/** Alpha composited onto white; RGB input is returned as it is. */
export function flattenOnWhite(image: RawPixels): RawPixels {
  if (image.channels === 3) return image;
  const { width, height, data } = image;
  const out = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) {
    const alpha = data[i + 3]!;
    for (let c = 0; c < 3; c++) out[j + c] = Math.round((data[i + c]! * alpha + 255 * (255 - alpha)) / 255);
  }
  return { data: out, width, height, channels: 3 };
}

/** Always four channels (opaque alpha added to RGB). */
export function withAlpha(image: RawPixels): RawPixels {
  if (image.channels === 4) return image;
  const { width, height, data } = image;
  const out = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < data.length; i += 3, j += 4) {
    out[j] = data[i]!;
    out[j + 1] = data[i + 1]!;
    out[j + 2] = data[i + 2]!;
    out[j + 3] = 255;
  }
  return { data: out, width, height, channels: 4 };
}

/** Rec. 601 luma, flattened onto white, as RGB with R = G = B. */
export function toGrey(image: RawPixels): RawPixels {
  const { width, height, data } = flattenOnWhite(image);
  const out = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 3) {
    const grey = Math.round(0.299 * data[i]! + 0.587 * data[i + 1]! + 0.114 * data[i + 2]!);
    out[i] = out[i + 1] = out[i + 2] = grey;
  }
  return { data: out, width, height, channels: 3 };
}

/** Black and white by Floyd-Steinberg dithering of the grey image; RGB output. */
export function toBilevel(image: RawPixels): RawPixels {
  const { width, height, data } = toGrey(image);
  const level = new Float32Array(width * height);
  for (let i = 0; i < level.length; i++) level[i] = data[i * 3]!;
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const old = level[i]!;
      const value = old < 128 ? 0 : 255;
      const error = old - value;
      if (x + 1 < width) level[i + 1]! += (error * 7) / 16;
      if (y + 1 < height) {
        if (x > 0) level[i + width - 1]! += (error * 3) / 16;
        level[i + width]! += (error * 5) / 16;
        if (x + 1 < width) level[i + width + 1]! += error / 16;
      }
      out[i * 3] = out[i * 3 + 1] = out[i * 3 + 2] = value;
    }
  }
  return { data: out, width, height, channels: 3 };
}

/** An image as palette indices: `palette` holds `colours` RGB triples. */
export type Indexed = {
  readonly width: number;
  readonly height: number;
  readonly palette: Uint8Array;
  readonly colours: number;
  readonly indices: Uint8Array;
};

/**
 * Median-cut quantisation (flattened onto white) to at most `maxColours`
 * colours, on a 5-bit-per-channel histogram; deterministic, no dithering.
 */
export function quantize(image: RawPixels, maxColours: number): Indexed {
  const { width, height, data } = flattenOnWhite(image);
  const binOf = (i: number): number => ((data[i]! >> 3) << 10) | ((data[i + 1]! >> 3) << 5) | (data[i + 2]! >> 3);
  const counts = new Uint32Array(32768);
  const sums = new Float64Array(32768 * 3);
  for (let i = 0; i < data.length; i += 3) {
    const bin = binOf(i);
    counts[bin]!++;
    sums[bin * 3]! += data[i]!;
    sums[bin * 3 + 1]! += data[i + 1]!;
    sums[bin * 3 + 2]! += data[i + 2]!;
  }
  const channelOf = (bin: number, c: number): number => (bin >> (10 - 5 * c)) & 31;
  type Box = { bins: number[]; population: number; range: number; axis: number };
  const makeBox = (bins: number[]): Box => {
    let population = 0;
    let range = -1;
    let axis = 0;
    for (const bin of bins) population += counts[bin]!;
    for (let c = 0; c < 3; c++) {
      let low = 31;
      let high = 0;
      for (const bin of bins) {
        low = Math.min(low, channelOf(bin, c));
        high = Math.max(high, channelOf(bin, c));
      }
      if (high - low > range) {
        range = high - low;
        axis = c;
      }
    }
    return { bins, population, range, axis };
  };
  const used: number[] = [];
  for (let bin = 0; bin < 32768; bin++) if (counts[bin]! > 0) used.push(bin);
  const boxes: Box[] = [makeBox(used)];
  while (boxes.length < maxColours) {
    // Split the most populous box that still spans more than one bin.
    let pick = -1;
    for (let i = 0; i < boxes.length; i++) {
      const box = boxes[i]!;
      if (box.bins.length > 1 && (pick < 0 || box.population * box.range > boxes[pick]!.population * boxes[pick]!.range)) pick = i;
    }
    if (pick < 0) break;
    const box = boxes[pick]!;
    const sorted = [...box.bins].sort((a, b) => channelOf(a, box.axis) - channelOf(b, box.axis) || a - b);
    let seen = 0;
    let cut = 1;
    for (; cut < sorted.length - 1; cut++) {
      seen += counts[sorted[cut - 1]!]!;
      if (seen * 2 >= box.population) break;
    }
    boxes.splice(pick, 1, makeBox(sorted.slice(0, cut)), makeBox(sorted.slice(cut)));
  }
  const palette = new Uint8Array(boxes.length * 3);
  boxes.forEach((box, index) => {
    const sum = [0, 0, 0];
    for (const bin of box.bins) for (let c = 0; c < 3; c++) sum[c]! += sums[bin * 3 + c]!;
    for (let c = 0; c < 3; c++) palette[index * 3 + c] = Math.round(sum[c]! / box.population);
  });
  // Every occupied bin maps to its nearest palette colour.
  const lookup = new Uint8Array(32768);
  for (const bin of used) {
    const r = sums[bin * 3]! / counts[bin]!;
    const g = sums[bin * 3 + 1]! / counts[bin]!;
    const b = sums[bin * 3 + 2]! / counts[bin]!;
    let best = 0;
    let bestDistance = Infinity;
    for (let i = 0; i < boxes.length; i++) {
      const distance = (r - palette[i * 3]!) ** 2 + (g - palette[i * 3 + 1]!) ** 2 + (b - palette[i * 3 + 2]!) ** 2;
      if (distance < bestDistance) {
        bestDistance = distance;
        best = i;
      }
    }
    lookup[bin] = best;
  }
  const indices = new Uint8Array(width * height);
  for (let i = 0; i < indices.length; i++) indices[i] = lookup[binOf(i * 3)]!;
  return { width, height, palette, colours: boxes.length, indices };
}

/** The RGB pixels of an indexed image. */
export function expandIndexed({ width, height, palette, indices }: Indexed): RawPixels {
  const out = new Uint8Array(width * height * 3);
  for (let i = 0; i < indices.length; i++) {
    out.set(palette.subarray(indices[i]! * 3, indices[i]! * 3 + 3), i * 3);
  }
  return { data: out, width, height, channels: 3 };
}

/** A black-and-white image as a two-entry indexed one: 0 black, 1 white. */
function bilevelIndexed(image: RawPixels): Indexed {
  const { width, height, data } = toBilevel(image);
  const indices = new Uint8Array(width * height);
  for (let i = 0; i < indices.length; i++) indices[i] = data[i * 3] ? 1 : 0;
  return { width, height, palette: Uint8Array.of(0, 0, 0, 255, 255, 255), colours: 2, indices };
}

/** Samples reduced to `bits` and scaled back, as a decoder scaling by 255 / (2^bits - 1) reads them. */
function reduceBits(image: RawPixels, bits: readonly [number, number, number]): RawPixels {
  const { width, height, data } = flattenOnWhite(image);
  const out = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const max = (1 << bits[i % 3]!) - 1;
    out[i] = Math.round((Math.round((data[i]! * max) / 255) * 255) / max);
  }
  return { data: out, width, height, channels: 3 };
}

// ---------------------------------------------------------------------------
// Byte writing

class Bytes {
  private buffer = new Uint8Array(1024);
  length = 0;

  private reserve(count: number): void {
    if (this.length + count <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + count));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  u8(...values: number[]): this {
    this.reserve(values.length);
    for (const value of values) this.buffer[this.length++] = value & 0xff;
    return this;
  }

  u16le(value: number): this {
    return this.u8(value, value >>> 8);
  }

  u32le(value: number): this {
    return this.u8(value, value >>> 8, value >>> 16, value >>> 24);
  }

  u32be(value: number): this {
    return this.u8(value >>> 24, value >>> 16, value >>> 8, value);
  }

  bytes(values: Uint8Array): this {
    this.reserve(values.length);
    this.buffer.set(values, this.length);
    this.length += values.length;
    return this;
  }

  ascii(text: string): this {
    return this.bytes(new TextEncoder().encode(text));
  }

  patchU32le(at: number, value: number): void {
    new DataView(this.buffer.buffer).setUint32(at, value, true);
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

// ---------------------------------------------------------------------------
// BMP

export type BmpOptions = {
  /** 24 unless said: 1/4/8 write a palette (quantised, or dithered for 1), 16 and 32 true colour. */
  readonly bitsPerPixel?: 1 | 4 | 8 | 16 | 24 | 32;
  /** `core`: 12-byte BITMAPCOREHEADER (OS/2 1.x); `info`: 40 bytes (default); `v4`/`v5`: 108/124 bytes. */
  readonly header?: 'core' | 'info' | 'v4' | 'v5';
  /** Negative height, top row first (not with `core` or `rle`). */
  readonly topDown?: boolean;
  /** RLE8 (8 bpp) or RLE4 (4 bpp). */
  readonly rle?: boolean;
  /**
   * 16/32 bpp: BI_BITFIELDS with these masks (an alpha mask keeps the input's
   * alpha). Without masks: BI_RGB, 5-5-5 for 16 bpp, B-G-R-0 for 32 bpp.
   */
  readonly masks?: { readonly red: number; readonly green: number; readonly blue: number; readonly alpha?: number };
};

const HEADER_SIZES = { core: 12, info: 40, v4: 108, v5: 124 } as const;

/** The pixels a BMP written with these options holds. */
export function bmpPixels(image: RawPixels, options: BmpOptions = {}): RawPixels {
  const bits = options.bitsPerPixel ?? 24;
  if (bits === 1) return toBilevel(image);
  if (bits === 4 || bits === 8) return expandIndexed(quantize(image, 1 << bits));
  if (bits === 16) {
    const masks = options.masks ?? { red: 0x7c00, green: 0x03e0, blue: 0x001f };
    return reduceBits(image, [maskBits(masks.red), maskBits(masks.green), maskBits(masks.blue)]);
  }
  if (bits === 32 && options.masks?.alpha) return withAlpha(image);
  return flattenOnWhite(image);
}

export function encodeBmp(image: RawPixels, options: BmpOptions = {}): Uint8Array {
  const bits = options.bitsPerPixel ?? 24;
  const headerKind = options.header ?? 'info';
  const headerSize = HEADER_SIZES[headerKind];
  const { width, height } = image;
  if (headerKind === 'core' && (width > 0xffff || height > 0xffff || bits === 16 || bits === 32 || options.rle)) {
    throw new Error('BITMAPCOREHEADER holds 16-bit sizes and 1/4/8/24-bit uncompressed pixels only');
  }
  if (options.rle && bits !== 4 && bits !== 8) throw new Error('RLE needs 4 or 8 bits per pixel');
  const topDown = options.topDown === true && !options.rle;
  const indexed = bits <= 8 ? (bits === 1 ? bilevelIndexed(image) : quantize(image, 1 << bits)) : undefined;
  const pixels = indexed ? undefined : bmpPixels(image, options);
  const masks = bits === 16 || bits === 32 ? options.masks : undefined;
  const compression = options.rle ? (bits === 8 ? 1 : 2) : masks ? 3 : 0;

  const out = new Bytes();
  out.ascii('BM').u32le(0).u32le(0).u32le(0); // file size and pixel offset patched below
  out.u32le(headerSize);
  if (headerKind === 'core') {
    out.u16le(width).u16le(height).u16le(1).u16le(bits);
  } else {
    out.u32le(width).u32le(topDown ? -height : height).u16le(1).u16le(bits);
    out.u32le(compression).u32le(0).u32le(2835).u32le(2835);
    out.u32le(indexed ? indexed.colours : 0).u32le(0);
    if (headerKind === 'info') {
      if (masks) out.u32le(masks.red).u32le(masks.green).u32le(masks.blue);
    } else {
      out.u32le(masks?.red ?? 0).u32le(masks?.green ?? 0).u32le(masks?.blue ?? 0).u32le(masks?.alpha ?? 0);
      out.ascii('BGRs'); // LCS_sRGB, stored little-endian
      for (let i = 0; i < 12; i++) out.u32le(0); // endpoints and gamma, unused for sRGB
      if (headerKind === 'v5') out.u32le(4).u32le(0).u32le(0).u32le(0); // LCS_GM_IMAGES, no profile
    }
  }
  if (indexed) {
    for (let i = 0; i < indexed.colours; i++) {
      const [r, g, b] = indexed.palette.subarray(i * 3, i * 3 + 3);
      out.u8(b!, g!, r!);
      if (headerKind !== 'core') out.u8(0);
    }
  }
  const pixelOffset = out.length;
  if (indexed && options.rle) {
    writeBmpRle(out, indexed, bits === 4);
  } else {
    const stride = Math.floor((width * bits + 31) / 32) * 4;
    const row = new Uint8Array(stride);
    for (let i = 0; i < height; i++) {
      const y = topDown ? i : height - 1 - i;
      row.fill(0);
      for (let x = 0; x < width; x++) {
        const p = y * width + x;
        if (indexed) {
          const index = indexed.indices[p]!;
          if (bits === 8) row[x] = index;
          else row[(x * bits) >> 3]! |= index << (8 - bits - ((x * bits) & 7));
        } else {
          const data = pixels!.data;
          const c = pixels!.channels;
          const [r, g, b, a] = [data[p * c]!, data[p * c + 1]!, data[p * c + 2]!, c === 4 ? data[p * c + 3]! : 255];
          if (bits === 24) {
            row.set([b, g, r], x * 3);
          } else if (bits === 16) {
            const m = masks ?? { red: 0x7c00, green: 0x03e0, blue: 0x001f };
            const value = pack(r, m.red) | pack(g, m.green) | pack(b, m.blue);
            row[x * 2] = value & 0xff;
            row[x * 2 + 1] = value >>> 8;
          } else {
            const m = masks ?? { red: 0xff0000, green: 0xff00, blue: 0xff };
            const value = (pack(r, m.red) | pack(g, m.green) | pack(b, m.blue) | pack(a, m.alpha ?? 0)) >>> 0;
            row[x * 4] = value & 0xff;
            row[x * 4 + 1] = (value >>> 8) & 0xff;
            row[x * 4 + 2] = (value >>> 16) & 0xff;
            row[x * 4 + 3] = value >>> 24;
          }
        }
      }
      out.bytes(row);
    }
  }
  out.patchU32le(2, out.length);
  out.patchU32le(10, pixelOffset);
  return out.result();
}

function maskShift(mask: number): number {
  let shift = 0;
  while (shift < 32 && ((mask >>> shift) & 1) === 0) shift++;
  return shift;
}

function maskBits(mask: number): number {
  return (mask >>> maskShift(mask)).toString(2).length;
}

/** An 8-bit sample scaled into a contiguous mask. */
function pack(value: number, mask: number): number {
  if (mask === 0) return 0;
  const shift = maskShift(mask);
  const max = mask >>> shift;
  return Math.round((value * max) / 255) << shift;
}

/**
 * RLE8 / RLE4, rows bottom-up: runs of two or more equal indices encoded,
 * other stretches of three or more in absolute mode, an end-of-line after each
 * row and end-of-bitmap after the last.
 */
function writeBmpRle(out: Bytes, image: Indexed, fourBit: boolean): void {
  const { width, height, indices } = image;
  const start = out.length;
  for (let y = height - 1; y >= 0; y--) {
    const row = indices.subarray(y * width, (y + 1) * width);
    let x = 0;
    while (x < width) {
      let run = 1;
      while (x + run < width && run < 255 && row[x + run] === row[x]) run++;
      if (run >= 2) {
        out.u8(run, fourBit ? (row[x]! << 4) | row[x]! : row[x]!);
        x += run;
        continue;
      }
      // A literal stretch up to the next run of two.
      let end = x + 1;
      while (end < width && end - x < 255 && !(end + 1 < width && row[end] === row[end + 1])) end++;
      const count = end - x;
      if (count < 3) {
        for (let i = x; i < end; i++) out.u8(1, fourBit ? row[i]! << 4 : row[i]!);
      } else {
        out.u8(0, count);
        if (fourBit) {
          for (let i = 0; i < count; i += 2) out.u8((row[x + i]! << 4) | (i + 1 < count ? row[x + i + 1]! : 0));
        } else {
          out.bytes(row.subarray(x, end));
        }
        if ((out.length - start) % 2 === 1) out.u8(0);
      }
      x = end;
    }
    out.u8(0, y === 0 ? 1 : 0);
  }
}

// ---------------------------------------------------------------------------
// PBM / PGM / PPM

export type PnmOptions = {
  /** P1-P6. */
  readonly kind: 1 | 2 | 3 | 4 | 5 | 6;
  /** Greymap/pixmap maxval, 255 unless said; over 255 gives 16-bit binary samples. */
  readonly maxval?: number;
  /** `#` comments in the header, on their own lines and after a number. */
  readonly comments?: boolean;
};

export function pnmPixels(image: RawPixels, options: PnmOptions): RawPixels {
  const { kind } = options;
  const reduced = kind === 1 || kind === 4 ? toBilevel(image) : kind === 2 || kind === 5 ? toGrey(image) : flattenOnWhite(image);
  const maxval = options.maxval ?? 255;
  if (kind === 1 || kind === 4 || maxval === 255 || maxval === 65535) return reduced;
  const data = reduced.data.map((v) => Math.round((Math.round((v * maxval) / 255) * 255) / maxval));
  return { ...reduced, data };
}

export function encodePnm(image: RawPixels, options: PnmOptions): Uint8Array {
  const { kind } = options;
  const maxval = options.maxval ?? 255;
  const bitmap = kind === 1 || kind === 4;
  const colour = kind === 3 || kind === 6;
  const { width, height, data } = pnmPixels(image, options);
  const out = new Bytes();
  const comment = (text: string): string => (options.comments ? `# ${text}\n` : '');
  out.ascii(`P${kind}\n${comment('written by devtools/image-formats.ts')}${width} ${options.comments ? '#width\n' : ''}${height}\n`);
  if (!bitmap) out.ascii(`${comment('maxval next')}${maxval}\n`);
  const sample = (v: number): number => Math.round((v * maxval) / 255);
  const pixels = width * height;
  if (kind === 4) {
    const rowBytes = Math.ceil(width / 8);
    for (let y = 0; y < height; y++) {
      const row = new Uint8Array(rowBytes);
      for (let x = 0; x < width; x++) if (data[(y * width + x) * 3] === 0) row[x >> 3]! |= 0x80 >> (x & 7);
      out.bytes(row);
    }
  } else if (kind === 5 || kind === 6) {
    for (let i = 0; i < pixels; i++) {
      for (let c = 0; c < (colour ? 3 : 1); c++) {
        const v = sample(data[i * 3 + c]!);
        if (maxval > 255) out.u8(v >>> 8, v);
        else out.u8(v);
      }
    }
  } else {
    // ASCII: lines of at most 70 characters, as netpbm writes them.
    let line = '';
    const lines: string[] = [];
    for (let i = 0; i < pixels; i++) {
      for (let c = 0; c < (colour ? 3 : 1); c++) {
        const token = kind === 1 ? (data[i * 3] === 0 ? '1' : '0') : String(sample(data[i * 3 + c]!));
        const separator = kind === 1 || line === '' ? '' : ' ';
        if (line.length + separator.length + token.length > 70) {
          lines.push(line);
          line = token;
        } else {
          line += separator + token;
        }
      }
    }
    lines.push(line);
    out.ascii(lines.join('\n') + '\n');
  }
  return out.result();
}

// ---------------------------------------------------------------------------
// Sun raster

export type SunRasterOptions = {
  /** 24 unless said: 1 (dithered, 1 = black), 8 (quantised, RMT_EQUAL_RGB colormap), 24 or 32 (pad byte zero). */
  readonly depth?: 1 | 8 | 24 | 32;
  /** `standard` (RT_STANDARD, BGR: default), `rgb` (RT_FORMAT_RGB) or `rle` (RT_BYTE_ENCODED, BGR). */
  readonly type?: 'standard' | 'rgb' | 'rle';
};

export function sunRasterPixels(image: RawPixels, options: SunRasterOptions = {}): RawPixels {
  const depth = options.depth ?? 24;
  if (depth === 1) return toBilevel(image);
  if (depth === 8) return expandIndexed(quantize(image, 256));
  return flattenOnWhite(image);
}

export function encodeSunRaster(image: RawPixels, options: SunRasterOptions = {}): Uint8Array {
  const depth = options.depth ?? 24;
  const type = options.type ?? 'standard';
  const { width, height } = image;
  const stride = Math.ceil((width * depth) / 16) * 2;
  const raster = new Uint8Array(stride * height);
  let colormap = new Uint8Array(0);
  if (depth === 8) {
    const indexed = quantize(image, 256);
    colormap = new Uint8Array(indexed.colours * 3);
    for (let i = 0; i < indexed.colours; i++) {
      for (let c = 0; c < 3; c++) colormap[c * indexed.colours + i] = indexed.palette[i * 3 + c]!;
    }
    for (let y = 0; y < height; y++) raster.set(indexed.indices.subarray(y * width, (y + 1) * width), y * stride);
  } else {
    const { data } = sunRasterPixels(image, options);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const p = (y * width + x) * 3;
        if (depth === 1) {
          if (data[p] === 0) raster[y * stride + (x >> 3)]! |= 0x80 >> (x & 7);
        } else {
          const at = y * stride + x * (depth / 8) + (depth === 32 ? 1 : 0);
          const [first, last] = type === 'rgb' ? [data[p]!, data[p + 2]!] : [data[p + 2]!, data[p]!];
          raster[at] = first;
          raster[at + 1] = data[p + 1]!;
          raster[at + 2] = last;
        }
      }
    }
  }
  const body = type === 'rle' ? sunRle(raster) : raster;
  const out = new Bytes();
  out.u32be(0x59a66a95).u32be(width).u32be(height).u32be(depth).u32be(body.length);
  out.u32be(type === 'standard' ? 1 : type === 'rle' ? 2 : 3);
  out.u32be(colormap.length > 0 ? 1 : 0).u32be(colormap.length);
  return out.bytes(colormap).bytes(body).result();
}

/** RT_BYTE_ENCODED: runs of three or more (or any 0x80) as 0x80 n-1 v, a single 0x80 as 0x80 0x00. */
function sunRle(raster: Uint8Array): Uint8Array {
  const out = new Bytes();
  let i = 0;
  while (i < raster.length) {
    const value = raster[i]!;
    let run = 1;
    while (i + run < raster.length && run < 256 && raster[i + run] === value) run++;
    if (run >= 3 || (value === 0x80 && run === 2)) out.u8(0x80, run - 1, value);
    else if (value === 0x80) out.u8(0x80, 0);
    else for (let k = 0; k < run; k++) out.u8(value);
    i += run;
  }
  return out.result();
}

// ---------------------------------------------------------------------------
// The variants

async function viaSharp(image: RawPixels, write: (input: Sharp) => Sharp): Promise<Uint8Array> {
  const { data, width, height, channels } = image;
  return new Uint8Array(await write(sharp(data, { raw: { width, height, channels } })).toBuffer());
}

const identity = (image: RawPixels): RawPixels => image;

function bmp(name: string, options: BmpOptions, extension = 'bmp'): FormatVariant {
  return {
    name,
    extension,
    format: 'bmp',
    lossy: false,
    pixels: (image) => bmpPixels(image, options),
    encode: async (image) => encodeBmp(image, options),
  };
}

function pnm(name: string, extension: string, options: PnmOptions): FormatVariant {
  return {
    name,
    extension,
    format: 'pnm',
    lossy: false,
    pixels: (image) => pnmPixels(image, options),
    encode: async (image) => encodePnm(image, options),
  };
}

function sun(name: string, options: SunRasterOptions, extension = 'ras'): FormatVariant {
  return {
    name,
    extension,
    format: 'sunraster',
    lossy: false,
    pixels: (image) => sunRasterPixels(image, options),
    encode: async (image) => encodeSunRaster(image, options),
  };
}

/** Every spec format, in the variants real files use. */
export const FORMAT_VARIANTS: readonly FormatVariant[] = [
  // sharp writes these itself.
  {
    name: 'jpeg',
    extension: 'jpg',
    format: 'jpeg',
    lossy: true,
    pixels: flattenOnWhite,
    encode: (image) => viaSharp(flattenOnWhite(image), (s) => s.jpeg({ quality: 90 })),
  },
  { name: 'png', extension: 'png', format: 'png', lossy: false, pixels: identity, encode: (image) => viaSharp(image, (s) => s.png()) },
  // GIF: sharp's own palette quantiser (and binary transparency) stands between the pixels and the file.
  { name: 'gif', extension: 'gif', format: 'gif', lossy: true, pixels: identity, encode: (image) => viaSharp(image, (s) => s.gif()) },
  { name: 'webp', extension: 'webp', format: 'webp', lossy: true, pixels: identity, encode: (image) => viaSharp(image, (s) => s.webp()) },
  {
    name: 'webp-lossless',
    extension: 'webp',
    format: 'webp',
    lossy: false,
    pixels: identity,
    encode: (image) => viaSharp(image, (s) => s.webp({ lossless: true, exact: true })),
  },
  // sharp's default TIFF compression is JPEG.
  {
    name: 'tiff-jpeg',
    extension: 'tif',
    format: 'tiff',
    lossy: true,
    pixels: flattenOnWhite,
    encode: (image) => viaSharp(flattenOnWhite(image), (s) => s.tiff()),
  },
  {
    name: 'tiff-lzw',
    extension: 'tiff',
    format: 'tiff',
    lossy: false,
    pixels: identity,
    encode: (image) => viaSharp(image, (s) => s.tiff({ compression: 'lzw' })),
  },
  // BMP / DIB
  bmp('bmp-24', {}),
  bmp('dib-24', {}, 'dib'),
  bmp('bmp-24-top-down', { topDown: true }),
  bmp('bmp-24-core', { header: 'core' }),
  bmp('bmp-32', { bitsPerPixel: 32 }),
  bmp('bmp-32-v4-alpha', { bitsPerPixel: 32, header: 'v4', masks: { red: 0xff0000, green: 0xff00, blue: 0xff, alpha: 0xff000000 } }),
  bmp('bmp-32-v5-alpha', { bitsPerPixel: 32, header: 'v5', masks: { red: 0xff0000, green: 0xff00, blue: 0xff, alpha: 0xff000000 } }),
  bmp('bmp-32-bitfields', { bitsPerPixel: 32, masks: { red: 0xff, green: 0xff00, blue: 0xff0000 } }),
  bmp('bmp-16', { bitsPerPixel: 16 }),
  bmp('bmp-16-565', { bitsPerPixel: 16, masks: { red: 0xf800, green: 0x07e0, blue: 0x001f } }),
  bmp('bmp-8', { bitsPerPixel: 8 }),
  bmp('bmp-8-rle', { bitsPerPixel: 8, rle: true }),
  bmp('bmp-4', { bitsPerPixel: 4 }),
  bmp('bmp-4-rle', { bitsPerPixel: 4, rle: true }),
  bmp('bmp-1', { bitsPerPixel: 1 }),
  // PBM / PGM / PPM
  pnm('pbm-ascii', 'pbm', { kind: 1 }),
  pnm('pgm-ascii', 'pgm', { kind: 2, comments: true }),
  pnm('ppm-ascii', 'ppm', { kind: 3 }),
  pnm('pbm', 'pbm', { kind: 4 }),
  pnm('pgm', 'pgm', { kind: 5 }),
  pnm('ppm', 'ppm', { kind: 6, comments: true }),
  pnm('pgm-16', 'pgm', { kind: 5, maxval: 65535 }),
  pnm('ppm-16', 'ppm', { kind: 6, maxval: 65535 }),
  pnm('ppm-ascii-maxval-1023', 'ppm', { kind: 3, maxval: 1023 }),
  // Sun raster
  sun('sun-24', {}),
  sun('sun-24-rgb', { type: 'rgb' }, 'sr'),
  sun('sun-24-rle', { type: 'rle' }),
  sun('sun-32', { depth: 32 }),
  sun('sun-8', { depth: 8 }),
  sun('sun-8-rle', { depth: 8, type: 'rle' }),
  sun('sun-1', { depth: 1 }),
];
