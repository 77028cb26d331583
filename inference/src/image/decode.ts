import sharp, { type Metadata, type Sharp } from 'sharp';
import { decodeRawImage, ImageFormatError, type RawImage } from './formats/index.ts';
import { isSharpFormat, sniffFormat, type ImageFormat, type SharpFormat } from './sniff.ts';

// Every upload is new: libvips's operation cache would only keep the decoded images of past requests alive.
sharp.cache(false);
// One libvips thread an operation: the image gate (priority.ts) already runs one job a core side by side, and a bulk
// decode spread over every core took them from a search's engine run (docs/measurements.md, "Catalog work beside
// searches").
sharp.concurrency(1);

/** The API's largest accepted image: width * height. */
export const MAX_INPUT_PIXELS = 40_000_000;

/**
 * The longest side accepted: JPEG's and GIF's largest, as the Worker's probe has it. Decoders' row buffers grow with
 * the width (a 40 KB PNG of 40,000,000 x 1 takes a gigabyte to decode) and their costs per row with the height
 * (1 x 40,000,000 takes ten seconds), so a 40 MP image may not be a single line.
 */
export const MAX_INPUT_SIDE = 65_535;

/**
 * Long side of the pixels kept after decoding. Every task works far below it
 * (the embedder at 224 px), and shrinking while decoding (JPEG/WebP shrink-on-
 * load) keeps a 40 MP upload from costing 120 MB of RGB per request.
 */
export const WORKING_MAX_SIDE = 2048;

/** 8-bit RGB pixels, row-major, 3 bytes per pixel, no padding. */
export type RgbPixels = {
  readonly data: Buffer;
  readonly width: number;
  readonly height: number;
  /**
   * Where the image has an alpha channel: its value per pixel (0 transparent,
   * 255 opaque), row-major, 1 byte per pixel. `data` is then already
   * flattened onto white; the models see that, the colours task reads the
   * alpha to leave transparent pixels out. Absent when the image has no alpha channel.
   */
  readonly alpha?: Buffer;
};

export type DecodedImage = {
  /** Size of the original image as displayed, i.e. after EXIF orientation. */
  readonly width: number;
  readonly height: number;
  readonly format: ImageFormat;
  /** Oriented, alpha flattened onto white (and kept beside, if any), long side at most WORKING_MAX_SIDE. */
  readonly pixels: RgbPixels;
};

export type ImageErrorCode = 'undecodable_image' | 'image_too_large';

export class ImageDecodeError extends Error {
  readonly code: ImageErrorCode;

  constructor(code: ImageErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ImageDecodeError';
    this.code = code;
  }
}

/**
 * Decodes the bytes of any spec format, told by their magic bytes. The header alone gives the size, so bombs
 * (a huge declared size in a tiny file) are refused before any pixel is decoded; limitInputPixels guards the decoder
 * as well.
 */
export async function decodeImage(bytes: Uint8Array): Promise<DecodedImage> {
  const format = sniffFormat(bytes);
  if (format === null) throw notAnImage();
  return isSharpFormat(format) ? decodeWithSharp(bytes, format) : decodeWithOwnDecoder(bytes);
}

async function decodeWithSharp(bytes: Uint8Array, format: SharpFormat): Promise<DecodedImage> {
  let metadata: Metadata;
  try {
    // No pixel limit for reading the header: the size is checked below, with the service's own error.
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (cause) {
    throw new ImageDecodeError('undecodable_image', `The ${format} header could not be read.`, { cause });
  }
  if (metadata.format !== format) {
    throw new ImageDecodeError('undecodable_image', `The bytes start as ${format} but read as ${metadata.format}.`);
  }
  const { width, height } = orientedSize(metadata);
  checkSize(width, height);
  const input = sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', pages: 1 });
  return { width, height, format, pixels: await workingCopy(input) };
}

/**
 * sharp's prebuilt libvips reads no BMP, PNM or Sun raster: decode those in
 * TypeScript and hand sharp the raw pixels, so the rest is the same path.
 */
async function decodeWithOwnDecoder(bytes: Uint8Array): Promise<DecodedImage> {
  let raw: RawImage | null;
  try {
    raw = decodeRawImage(bytes, { maxPixels: MAX_INPUT_PIXELS, maxSide: MAX_INPUT_SIDE });
  } catch (cause) {
    if (!(cause instanceof ImageFormatError)) throw cause;
    if (cause.kind === 'too_large') {
      throw new ImageDecodeError('image_too_large', `The image is too large (${cause.message}).`, { cause });
    }
    throw new ImageDecodeError('undecodable_image', `The image data could not be decoded: ${cause.message}.`, { cause });
  }
  if (!raw) throw notAnImage();
  const { width, height, channels, data } = raw;
  const input = sharp(data, { raw: { width, height, channels }, limitInputPixels: MAX_INPUT_PIXELS });
  return { width, height, format: raw.format, pixels: await workingCopy(input) };
}

const notAnImage = (): ImageDecodeError =>
  new ImageDecodeError('undecodable_image', 'The bytes are not an image of a supported format.');

function checkSize(width: number, height: number): void {
  if (width * height > MAX_INPUT_PIXELS || Math.max(width, height) > MAX_INPUT_SIDE) {
    const limits = `at most ${MAX_INPUT_PIXELS} are accepted, at most ${MAX_INPUT_SIDE} on a side`;
    throw new ImageDecodeError('image_too_large', `The image has ${width}x${height} pixels; ${limits}.`);
  }
}

/**
 * Oriented, capped to WORKING_MAX_SIDE, 8-bit sRGB, alpha flattened onto
 * white; an alpha channel is also returned on its own. The one decode yields
 * RGB or RGBA; flattening and extracting the alpha are two more sharp passes
 * over those raw pixels (on the thread pool, like the decode), not decodes.
 */
async function workingCopy(input: Sharp): Promise<RgbPixels> {
  try {
    // failOn 'error': tolerate the benign warnings (e.g. trailing junk) common in real uploads.
    const { data, info } = await input
      .autoOrient()
      .resize({ width: WORKING_MAX_SIDE, height: WORKING_MAX_SIDE, fit: 'inside', withoutEnlargement: true })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    const { width, height, channels } = info;
    if (channels === 3) return { data, width, height };
    if (channels !== 4) {
      throw new Error(`decoded to ${channels} channels, expected 3 or 4`);
    }
    const raw = { raw: { width, height, channels } } as const;
    const [rgb, alpha] = await Promise.all([
      sharp(data, raw).flatten({ background: '#ffffff' }).raw().toBuffer(),
      sharp(data, raw).extractChannel(3).raw().toBuffer(),
    ]);
    return { data: rgb, width, height, alpha };
  } catch (cause) {
    throw new ImageDecodeError('undecodable_image', 'The image data could not be decoded.', { cause });
  }
}

/** Displayed size: EXIF orientations 5-8 swap width and height. */
function orientedSize(metadata: Metadata): { width: number; height: number } {
  const { width, height, orientation } = metadata;
  if (!width || !height) {
    throw new ImageDecodeError('undecodable_image', 'The image header has no dimensions.');
  }
  return orientation !== undefined && orientation >= 5 ? { width: height, height: width } : { width, height };
}
