/**
 * Pure-TypeScript decoders for the API's formats that sharp's prebuilt libvips
 * cannot read: BMP/DIB, PBM/PGM/PPM (P1-P6) and Sun raster. Told apart by their
 * magic bytes, never by a file name.
 *
 * Every decoder checks the declared size against the pixel limit and against
 * the bytes present (but for RLE data) before it allocates, bounds-checks its
 * reads, and throws an ImageFormatError on anything it cannot decode.
 */
import { decodeBmp, isBmp } from './bmp.ts';
import type { DecodeOptions, RawFormat, RawImage } from './common.ts';
import { decodePnm, isPnm } from './pnm.ts';
import { decodeSunRaster, isSunRaster } from './sun-raster.ts';

export { DEFAULT_MAX_PIXELS, ImageFormatError } from './common.ts';
export type { DecodeOptions, FormatErrorKind, RawFormat, RawImage } from './common.ts';

/** Which of these formats the bytes claim to be, from their first bytes; null for any other. */
export function sniffRawFormat(bytes: Uint8Array): RawFormat | null {
  if (isBmp(bytes)) return 'bmp';
  if (isPnm(bytes)) return 'pnm';
  if (isSunRaster(bytes)) return 'sunraster';
  return null;
}

/**
 * The decoded pixels, or null when the bytes are none of these formats.
 * Throws ImageFormatError when they are one but cannot be decoded (truncated,
 * corrupt, unsupported variant, or over `maxPixels`).
 */
export function decodeRawImage(bytes: Uint8Array, options?: DecodeOptions): RawImage | null {
  switch (sniffRawFormat(bytes)) {
    case 'bmp':
      return decodeBmp(bytes, options);
    case 'pnm':
      return decodePnm(bytes, options);
    case 'sunraster':
      return decodeSunRaster(bytes, options);
    case null:
      return null;
  }
}
