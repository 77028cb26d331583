import sharp from 'sharp';
import type { RgbPixels } from './decode.ts';

/**
 * How the picture meets a fixed model input: 'fill' stretches the whole
 * picture to the target (aspect ratio lost), 'cover' keeps the aspect ratio
 * and crops the centre.
 */
export type ResizeFit = 'fill' | 'cover';

/** Resizes decoded pixels to exactly width x height (Lanczos, antialiased). */
export async function resizeRgb(pixels: RgbPixels, width: number, height: number, fit: ResizeFit): Promise<RgbPixels> {
  const { data, info } = await sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 3 } })
    .resize({ width, height, fit })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}
