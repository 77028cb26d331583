import sharp, { type Metadata, type Sharp } from 'sharp';
import { decodeRawImage, ImageFormatError, type RawImage } from './formats/index.ts';

/** The spec's largest accepted image: width * height. */
export const MAX_INPUT_PIXELS = 40_000_000;

/**
 * Long side of the pixels kept after decoding. Every task works far below it
 * (the embedder at 224 px), and shrinking while decoding (JPEG/WebP shrink-on-
 * load) keeps a 40 MP upload from costing 120 MB of RGB per request.
 */
export const WORKING_MAX_SIDE = 2048;

/** Formats sharp decodes itself. */
const SHARP_FORMATS = ['jpeg', 'png', 'webp', 'gif', 'tiff'] as const;
type SharpFormat = (typeof SHARP_FORMATS)[number];
/** Every accepted format, named as the Worker's header probe names them; the last three through ./formats/. */
export type ImageFormat = SharpFormat | 'bmp' | 'pnm' | 'sunraster';

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

export async function decodeImage(bytes: Uint8Array): Promise<DecodedImage> {
  // The header alone gives format and size, so bombs are refused before any
  // pixel is decoded; limitInputPixels below guards the decoder as well.
  let metadata: Metadata | undefined;
  try {
    metadata = await sharp(bytes).metadata();
  } catch {
    // Not a format sharp reads: maybe BMP, PNM or Sun raster, below.
  }
  const format = metadata?.format as string | undefined;
  if (metadata && format !== undefined && isSharpFormat(format)) {
    const { width, height } = orientedSize(metadata);
    checkPixelCount(width, height);
    const input = sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', pages: 1 });
    return { width, height, format, pixels: await workingCopy(input) };
  }

  // sharp's prebuilt libvips reads no BMP, PNM or Sun raster: decode those in
  // TypeScript and hand sharp the raw pixels, so the rest is the same path.
  const raw = decodeRaw(bytes);
  if (!raw) {
    throw new ImageDecodeError(
      'undecodable_image',
      format === undefined ? 'The bytes are not a recognised image.' : `Unsupported image format: ${format}.`,
    );
  }
  const { width, height, channels, data } = raw;
  const input = sharp(data, { raw: { width, height, channels }, limitInputPixels: MAX_INPUT_PIXELS });
  return { width, height, format: raw.format, pixels: await workingCopy(input) };
}

function decodeRaw(bytes: Uint8Array): RawImage | null {
  try {
    return decodeRawImage(bytes, { maxPixels: MAX_INPUT_PIXELS });
  } catch (cause) {
    if (!(cause instanceof ImageFormatError)) throw cause;
    if (cause.kind === 'too_large') {
      throw new ImageDecodeError('image_too_large', `The image is too large (${cause.message}).`, { cause });
    }
    throw new ImageDecodeError('undecodable_image', `The image data could not be decoded: ${cause.message}.`, { cause });
  }
}

function checkPixelCount(width: number, height: number): void {
  if (width * height > MAX_INPUT_PIXELS) {
    throw new ImageDecodeError(
      'image_too_large',
      `The image has ${width}x${height} pixels; at most ${MAX_INPUT_PIXELS} are accepted.`,
    );
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

function isSharpFormat(format: string): format is SharpFormat {
  return (SHARP_FORMATS as readonly string[]).includes(format);
}

/** Displayed size: EXIF orientations 5-8 swap width and height. */
function orientedSize(metadata: Metadata): { width: number; height: number } {
  const { width, height, orientation } = metadata;
  if (!width || !height) {
    throw new ImageDecodeError('undecodable_image', 'The image header has no dimensions.');
  }
  return orientation !== undefined && orientation >= 5 ? { width: height, height: width } : { width, height };
}
