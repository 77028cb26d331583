import sharp from 'sharp';
import { IMAGE_WORK } from '../priority.ts';
import type { RgbPixels } from './decode.ts';

/**
 * How the picture meets a fixed model input: 'fill' stretches the whole
 * picture to the target (aspect ratio lost), 'cover' keeps the aspect ratio
 * and crops the centre.
 */
export type ResizeFit = 'fill' | 'cover';

/**
 * Resizes decoded pixels to exactly width x height (Lanczos, antialiased); with `centreShare` below 1, only the
 * centre that share of each side.
 */
export async function resizeRgb(pixels: RgbPixels, width: number, height: number, fit: ResizeFit, centreShare = 1): Promise<RgbPixels> {
  const image = sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 3 } });
  const resized = (centreShare < 1 ? image.extract(centre(pixels, centreShare)) : image).resize({ width, height, fit }).raw();
  const { data, info } = await IMAGE_WORK.run(() => resized.toBuffer({ resolveWithObject: true }));
  return { data, width: info.width, height: info.height };
}

function centre({ width, height }: RgbPixels, share: number): { left: number; top: number; width: number; height: number } {
  const part = (side: number) => Math.max(1, Math.round(side * share));
  return { left: (width - part(width)) >> 1, top: (height - part(height)) >> 1, width: part(width), height: part(height) };
}
