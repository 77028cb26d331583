import type { DecodedImage, RgbPixels } from './decode.ts';

/**
 * A rectangle in the original image's pixels as displayed (after EXIF
 * orientation): [x1, y1, x2, y2] with (0, 0) the top-left corner. The numbers
 * are pixel edges, not centres: [0, 0, width, height] is the whole image and
 * x2 - x1 is the width.
 */
export type Box = readonly [x1: number, y1: number, x2: number, y2: number];

/**
 * What a task runs on: the working pixels of the whole image or of a part of
 * it, and where that part lies in the original. The working copy may be
 * smaller than the original (decode.ts caps its long side), so a pixel here
 * may stand for several original pixels; `box` maps one onto the other.
 */
export type ImageView = {
  readonly pixels: RgbPixels;
  /** The area `pixels` shows, in original pixels (fractional where the working copy is scaled). */
  readonly box: Box;
};

export function wholeImage(image: DecodedImage): ImageView {
  return { pixels: image.pixels, box: [0, 0, image.width, image.height] };
}

/** Clamps a box to [0, width] x [0, height]; null when nothing of it is left. */
export function clampBox(box: Box, width: number, height: number): Box | null {
  const x1 = Math.min(Math.max(box[0], 0), width);
  const y1 = Math.min(Math.max(box[1], 0), height);
  const x2 = Math.min(Math.max(box[2], 0), width);
  const y2 = Math.min(Math.max(box[3], 0), height);
  return x2 > x1 && y2 > y1 ? [x1, y1, x2, y2] : null;
}

/** Slack for float error when a box edge falls exactly on a pixel edge. */
const EDGE_EPSILON = 1e-6;

/**
 * The part of a view inside `box` (original pixels): the working pixels it
 * covers, widened to whole pixels and clamped to the view, at least one pixel
 * each way. Where the working copy is the original (images up to 2048 px) the
 * result is exactly the original's pixels in that box.
 */
export function cropView(view: ImageView, box: Box): ImageView {
  const { pixels } = view;
  const [vx1, vy1, vx2, vy2] = view.box;
  const scaleX = pixels.width / (vx2 - vx1);
  const scaleY = pixels.height / (vy2 - vy1);
  const left = clamp(Math.floor((box[0] - vx1) * scaleX + EDGE_EPSILON), 0, pixels.width - 1);
  const top = clamp(Math.floor((box[1] - vy1) * scaleY + EDGE_EPSILON), 0, pixels.height - 1);
  const right = clamp(Math.ceil((box[2] - vx1) * scaleX - EDGE_EPSILON), left + 1, pixels.width);
  const bottom = clamp(Math.ceil((box[3] - vy1) * scaleY - EDGE_EPSILON), top + 1, pixels.height);
  return {
    pixels: cropPixels(pixels, left, top, right - left, bottom - top),
    box: [vx1 + left / scaleX, vy1 + top / scaleY, vx1 + right / scaleX, vy1 + bottom / scaleY],
  };
}

/** A copy of a rectangle of RGB pixels, and of their alpha if any (the caller keeps it inside the image). */
export function cropPixels(pixels: RgbPixels, left: number, top: number, width: number, height: number): RgbPixels {
  if (left === 0 && top === 0 && width === pixels.width && height === pixels.height) return pixels;
  const data = copyRect(pixels.data, pixels.width, 3, left, top, width, height);
  if (!pixels.alpha) return { data, width, height };
  return { data, width, height, alpha: copyRect(pixels.alpha, pixels.width, 1, left, top, width, height) };
}

function copyRect(
  source: Buffer,
  sourceWidth: number,
  bytesPerPixel: number,
  left: number,
  top: number,
  width: number,
  height: number,
): Buffer {
  const data = Buffer.allocUnsafe(width * height * bytesPerPixel);
  const rowBytes = width * bytesPerPixel;
  for (let y = 0; y < height; y++) {
    const start = ((top + y) * sourceWidth + left) * bytesPerPixel;
    source.copy(data, y * rowBytes, start, start + rowBytes);
  }
  return data;
}

/** `value` within [min, max]. */
export function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), max);
}
