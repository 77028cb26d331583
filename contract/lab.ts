/**
 * sRGB (IEC 61966-2-1, D65) <-> CIELAB (CIE 1976, D65 white), by the standard
 * formulas: the sRGB transfer curve, the sRGB -> XYZ matrix, then L*a*b*
 * with the CIE's exact epsilon = 216/24389 and kappa = 24389/27.
 *
 * The Worker's palette vectors (src/colors/palette-vector.ts) convert with this module too, so that colour queries and
 * palettes are measured alike: it imports nothing and is plain, erasable TypeScript, which the Worker's bundler and
 * Node both read.
 */

export type Lab = readonly [l: number, a: number, b: number];

/** D65 reference white, Y = 1. */
const WHITE_X = 0.95047;
const WHITE_Z = 1.08883;
const EPSILON = 216 / 24389;
const KAPPA = 24389 / 27;

/** An 8-bit sRGB channel value (0-255) in linear light (0-1). */
export function srgbToLinear(value: number): number {
  const c = value / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** Linear light (0-1) to an sRGB channel value, 0-255, not rounded or clamped. */
export function linearToSrgb(value: number): number {
  const c = value <= 0.0031308 ? 12.92 * value : 1.055 * Math.sign(value) * Math.abs(value) ** (1 / 2.4) - 0.055;
  return c * 255;
}

/** srgbToLinear of every 8-bit value. */
export const LINEAR: Float64Array = Float64Array.from({ length: 256 }, (_, value) => srgbToLinear(value));

/** Linear RGB (0-1) to Lab. */
export function linearRgbToLab(r: number, g: number, b: number): Lab {
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / WHITE_X;
  const y = 0.2126729 * r + 0.7151522 * g + 0.072175 * b;
  const z = (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / WHITE_Z;
  const fx = labF(x);
  const fy = labF(y);
  const fz = labF(z);
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

/** 8-bit sRGB to Lab. */
export function srgbToLab(r: number, g: number, b: number): Lab {
  return linearRgbToLab(LINEAR[r]!, LINEAR[g]!, LINEAR[b]!);
}

/** Lab to sRGB channel values, rounded and clamped to 0-255. */
export function labToSrgb([l, a, b]: Lab): [number, number, number] {
  const fy = (l + 16) / 116;
  const fx = fy + a / 500;
  const fz = fy - b / 200;
  const x = labFInverse(fx) * WHITE_X;
  const y = l > KAPPA * EPSILON ? fy ** 3 : l / KAPPA;
  const z = labFInverse(fz) * WHITE_Z;
  const linear = [
    3.2404542 * x - 1.5371385 * y - 0.4985314 * z,
    -0.969266 * x + 1.8760108 * y + 0.041556 * z,
    0.0556434 * x - 0.2040259 * y + 1.0572252 * z,
  ];
  return linear.map((value) => Math.min(255, Math.max(0, Math.round(linearToSrgb(value))))) as [number, number, number];
}

/** Lower-case "rrggbb". */
export function toHex([r, g, b]: readonly [number, number, number]): string {
  return [r, g, b].map((value) => value.toString(16).padStart(2, '0')).join('');
}

/** A colour as "rrggbb", in either case. */
export const HEX_COLOR = /^[0-9a-fA-F]{6}$/;

/** Lab of "rrggbb" (with or without "#"). */
export function hexToLab(hex: string): Lab {
  const digits = hex.replace(/^#/, '');
  if (!HEX_COLOR.test(digits)) throw new Error(`not a colour: ${hex}`);
  const value = Number.parseInt(digits, 16);
  return srgbToLab((value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff);
}

/** CIE76 colour difference: the Euclidean distance in Lab. */
export function deltaE(p: Lab, q: Lab): number {
  return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

function labF(t: number): number {
  return t > EPSILON ? Math.cbrt(t) : (KAPPA * t + 16) / 116;
}

function labFInverse(f: number): number {
  const cube = f ** 3;
  return cube > EPSILON ? cube : (116 * f - 16) / KAPPA;
}
