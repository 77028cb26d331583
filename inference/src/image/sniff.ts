/**
 * Which spec format some bytes are, from their magic bytes alone, as the Worker's header probe tells them. libvips
 * reads far more (SVG, HEIF, PDF, ...): only bytes named here are handed to a decoder.
 */
import { sniffRawFormat } from './formats/index.ts';

/** Formats sharp decodes itself. */
export const SHARP_FORMATS = ['jpeg', 'png', 'webp', 'gif', 'tiff'] as const;
export type SharpFormat = (typeof SHARP_FORMATS)[number];
/** Every accepted format, named as the Worker's header probe names them; the last three through ./formats/. */
export type ImageFormat = SharpFormat | 'bmp' | 'pnm' | 'sunraster';

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0): boolean =>
  bytes.byteLength >= at + signature.length && signature.every((byte, i) => bytes[at + i] === byte);

const ascii = (text: string): number[] => [...text].map((char) => char.charCodeAt(0));

export function sniffFormat(bytes: Uint8Array): ImageFormat | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'webp';
  // Classic TIFF only, as the Worker reads it: not BigTIFF.
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff';
  return sniffRawFormat(bytes);
}

export function isSharpFormat(format: ImageFormat): format is SharpFormat {
  return (SHARP_FORMATS as readonly string[]).includes(format);
}
