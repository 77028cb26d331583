import sharp, { type KernelEnum } from 'sharp';
import type { RgbPixels } from '../../../image/decode.ts';
import { IMAGE_WORK } from '../../../priority.ts';
import type { Float32Tensor } from '../../../runtime/runtime.ts';
import type { PreprocessorConfig } from './configs.ts';
import type { AspectRule, ImageDefaults } from './families.ts';

/*
 * A model's image preprocessing as its preprocessor_config.json states it, in transformers' order: convert to RGB,
 * resize, centre crop, rescale, normalize, channels first. Resizing and cropping run in sharp (libvips), on the
 * service's image-work gate like every other resize; the arithmetic is a loop here.
 */

type Size = { readonly height: number; readonly width: number };

/**
 * A preprocessor_config.json's steps, read and checked: what `pixelValues` does. The input's size follows the image's
 * where neither a crop nor a resize to height/width fixes it (the DETR family's detectors: models/detect/hf/).
 */
export type ImageSteps = {
  /**
   * `shortestEdge` (and `longestEdge` as a cap): the aspect ratio kept, sized by transformers' generic rule or by the
   * `rule` of the family's image processor; `height`/`width`: stretched to that size.
   */
  readonly resize?: { readonly shortestEdge: number; readonly longestEdge?: number; readonly rule?: AspectRule } | Size;
  /** sharp's kernel for PIL's resample code. */
  readonly kernel: keyof KernelEnum;
  readonly crop?: Size;
  /** Each 0-255 value times this (do_rescale), typically 1/255. */
  readonly rescale?: number;
  readonly normalize?: { readonly mean: readonly number[]; readonly std: readonly number[] };
};

/** Steps that give every image one input size (an embedder's image tower). */
export type ImageProcessing = ImageSteps & {
  /** The input's height and width: the crop's, or the resize's when it stretches to a size. */
  readonly size: Size;
};

/** PIL's resample codes that sharp has a kernel for: PIL's bicubic is a = -0.5, sharp's (libvips') Catmull-Rom. */
const KERNELS: Readonly<Record<number, keyof KernelEnum>> = { 0: 'nearest', 1: 'lanczos3', 2: 'linear', 3: 'cubic' };
const RESAMPLE_NAMES: Readonly<Record<number, string>> = { 4: 'box', 5: 'hamming' };

/** The processing a config states, with the family's defaults for what it leaves out; anything unsupported throws. */
export function imageProcessingOf(config: PreprocessorConfig, defaults: ImageDefaults, where: string): ImageProcessing {
  const steps = imageStepsOf(config, defaults, where);
  const fixed = steps.crop ?? (steps.resize && 'height' in steps.resize ? steps.resize : undefined);
  if (!fixed) throw new Error(`${where}: preprocessor_config.json gives no fixed input size (a resize to height/width, or a centre crop, is needed)`);
  return { ...steps, size: fixed };
}

/** The steps a config states, with the family's defaults for what it leaves out; anything unsupported throws. */
export function imageStepsOf(config: PreprocessorConfig, defaults: ImageDefaults, where: string): ImageSteps {
  const fail = (why: string) => new Error(`${where}: preprocessor_config.json ${why}`);
  if (config.max_num_patches !== undefined && config.size === undefined) {
    throw fail('asks for NaFlex preprocessing (max_num_patches, patches at the image\'s aspect ratio), which is not supported: use a fixed-resolution export');
  }
  const resample = config.resample ?? defaults.resample;
  const kernel = KERNELS[resample];
  if (!kernel) throw fail(`resample ${resample}${RESAMPLE_NAMES[resample] ? ` (${RESAMPLE_NAMES[resample]})` : ''} is not supported (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic are)`);

  let resize: ImageSteps['resize'];
  if (config.do_resize ?? true) {
    const size = config.size;
    if (size === undefined) throw fail('has do_resize but no size');
    if (typeof size === 'number') resize = defaults.numberSizeIsSquare ? { height: size, width: size } : { shortestEdge: size };
    else if (size.height !== undefined && size.width !== undefined) resize = { height: size.height, width: size.width };
    else if (size.shortest_edge !== undefined) {
      resize = {
        shortestEdge: size.shortest_edge,
        ...(size.longest_edge !== undefined && { longestEdge: size.longest_edge }),
        ...(defaults.aspectRule && { rule: defaults.aspectRule }),
      };
    } else throw fail(`size ${JSON.stringify(size)} is not supported (shortest_edge, or height and width, are)`);
  }

  let crop: Size | undefined;
  if (config.do_center_crop ?? false) {
    const size = config.crop_size;
    if (size === undefined) throw fail('has do_center_crop but no crop_size');
    if (typeof size === 'number') crop = { height: size, width: size };
    else if (size.height !== undefined && size.width !== undefined) crop = { height: size.height, width: size.width };
    else throw fail(`crop_size ${JSON.stringify(size)} is not supported (height and width are)`);
  }

  const rescale = (config.do_rescale ?? true) ? (config.rescale_factor ?? 1 / 255) : undefined;
  const three = (value: number | number[] | undefined, fallback: readonly number[]): readonly number[] =>
    value === undefined ? fallback : typeof value === 'number' ? [value, value, value] : value;
  const normalize = (config.do_normalize ?? true) ? { mean: three(config.image_mean, defaults.mean), std: three(config.image_std, defaults.std) } : undefined;
  if (normalize?.std.some((value) => value === 0)) throw fail('has an image_std of 0');

  return { kernel, ...(resize && { resize }), ...(crop && { crop }), ...(rescale !== undefined && { rescale }), ...(normalize && { normalize }) };
}

/**
 * transformers' `get_resize_output_image_size` for a shortest edge (default_to_square False): the short side to
 * `shortestEdge`, the long one in proportion, truncated; both scaled down where the long one would pass `longestEdge`.
 */
export function shortestEdgeSize(width: number, height: number, shortestEdge: number, longestEdge?: number): Size {
  const [short, long] = width <= height ? [width, height] : [height, width];
  let newShort = shortestEdge;
  let newLong = Math.trunc((shortestEdge * long) / short);
  if (longestEdge !== undefined && newLong > longestEdge) {
    newShort = Math.trunc((longestEdge * newShort) / newLong);
    newLong = longestEdge;
  }
  newShort = Math.max(1, newShort);
  return width <= height ? { width: newShort, height: newLong } : { width: newLong, height: newShort };
}

/**
 * The DETR family's own `get_size_with_aspect_ratio` (transformers' image_processing_detr.py, which RT-DETR's and
 * conditional DETR's processors copy): the short side to `shortestEdge`, or, where the long side would pass
 * `longestEdge`, to that cap's share of it rounded (Python's round, half to even), the long side from the unrounded
 * share, truncated. YOLOS' copy tests a portrait image before an unchanged one and rounds both sides down to
 * multiples of 16.
 */
export function detrAspectSize(width: number, height: number, shortestEdge: number, longestEdge: number | undefined, rule: AspectRule): Size {
  let size = shortestEdge;
  let raw: number | undefined;
  if (longestEdge !== undefined && (Math.max(width, height) / Math.min(width, height)) * size > longestEdge) {
    raw = (longestEdge * Math.min(width, height)) / Math.max(width, height);
    size = roundHalfEven(raw);
  }
  const unchanged = (height <= width && height === size) || (width <= height && width === size);
  const portrait = width < height;
  let out: Size;
  if (unchanged && (rule === 'detr' || !portrait)) out = { width, height };
  else if (portrait) out = { width: size, height: Math.trunc(((raw ?? size) * height) / width) };
  else out = { width: Math.trunc(((raw ?? size) * width) / height), height: size };
  if (rule === 'yolos') out = { width: out.width - (out.width % 16), height: out.height - (out.height % 16) };
  return { width: Math.max(1, out.width), height: Math.max(1, out.height) };
}

/** Python's round(): halves to the even neighbour. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction !== 0.5) return Math.round(value);
  return floor % 2 === 0 ? floor : floor + 1;
}

/** The size a resize gives some pixels. */
function resizedSize(processing: ImageSteps, width: number, height: number): Size {
  const resize = processing.resize;
  if (!resize) return { width, height };
  if ('height' in resize) return resize;
  if (resize.rule) return detrAspectSize(width, height, resize.shortestEdge, resize.longestEdge, resize.rule);
  return shortestEdgeSize(width, height, resize.shortestEdge, resize.longestEdge);
}

/** The input's size for some pixels: the crop's, else the resize's (the image's own without either). */
export function inputSize(processing: ImageSteps, width: number, height: number): Size {
  return processing.crop ?? resizedSize(processing, width, height);
}

/** The model's `pixel_values` for some pixels: [1, 3, H, W] float32. */
export async function pixelValues(pixels: RgbPixels, processing: ImageSteps): Promise<Float32Tensor> {
  const rgb = await resizedAndCropped(pixels, processing);
  const { width, height } = inputSize(processing, pixels.width, pixels.height);
  const area = width * height;
  const data = new Float32Array(3 * area);
  const scale = processing.rescale ?? 1;
  const mean = processing.normalize?.mean ?? [0, 0, 0];
  const std = processing.normalize?.std ?? [1, 1, 1];
  for (let channel = 0; channel < 3; channel++) {
    const offset = mean[channel]!;
    const divisor = std[channel]!;
    const plane = channel * area;
    for (let i = 0; i < area; i++) data[plane + i] = (rgb[i * 3 + channel]! * scale - offset) / divisor;
  }
  return { data, shape: [1, 3, height, width] };
}

/**
 * The resized and centre-cropped RGB bytes, `processing.size` exactly. transformers crops at ((h - ch) // 2,
 * (w - cw) // 2) and pads with black where the crop is larger than the image; the crop is taken in the same sharp
 * pipeline as the resize (libvips computes only the region it needs, so a long thin image is never resized whole).
 */
async function resizedAndCropped(pixels: RgbPixels, processing: ImageSteps): Promise<Buffer> {
  const resized = resizedSize(processing, pixels.width, pixels.height);
  let image = sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 3 } });
  if (processing.resize && (resized.width !== pixels.width || resized.height !== pixels.height)) {
    image = image.resize({ width: resized.width, height: resized.height, fit: 'fill', kernel: processing.kernel });
  }
  const crop = processing.crop;
  const fits = !crop || (crop.width <= resized.width && crop.height <= resized.height);
  if (crop && fits) {
    image = image.extract({ left: (resized.width - crop.width) >> 1, top: (resized.height - crop.height) >> 1, width: crop.width, height: crop.height });
  }
  const { data, info } = await IMAGE_WORK.run(() => image.raw().toBuffer({ resolveWithObject: true }));
  if (fits) return data;
  return centreOnBlack(data, info.width, info.height, crop!);
}

/** A centre crop of raw RGB, padded with black on the sides where the crop is larger (transformers' `center_crop`). */
function centreOnBlack(data: Buffer, width: number, height: number, crop: Size): Buffer {
  const out = Buffer.alloc(crop.width * crop.height * 3);
  // Source offset where the image is larger (rounded down), destination offset where the crop is (rounded up, as
  // transformers pads: ceil of half the difference).
  const sx = Math.max(0, (width - crop.width) >> 1);
  const sy = Math.max(0, (height - crop.height) >> 1);
  const dx = Math.max(0, (crop.width - width + 1) >> 1);
  const dy = Math.max(0, (crop.height - height + 1) >> 1);
  const columns = Math.min(width, crop.width);
  const rows = Math.min(height, crop.height);
  for (let y = 0; y < rows; y++) {
    const from = ((sy + y) * width + sx) * 3;
    data.copy(out, ((dy + y) * crop.width + dx) * 3, from, from + columns * 3);
  }
  return out;
}

/**
 * The pixels padded at the bottom and the right to a square of their longer side, `value` (0-255) in every channel:
 * OWLv2's step before its resize (transformers' Owlv2ImageProcessor.pad, as the original OWLv2 code pads), so that
 * the model's boxes are fractions of that square.
 */
export function padToSquare(pixels: RgbPixels, value: number): RgbPixels {
  const side = Math.max(pixels.width, pixels.height);
  if (pixels.width === side && pixels.height === side) return pixels;
  const data = Buffer.alloc(side * side * 3, value);
  const row = pixels.width * 3;
  for (let y = 0; y < pixels.height; y++) pixels.data.copy(data, y * side * 3, y * row, (y + 1) * row);
  return { data, width: side, height: side };
}
