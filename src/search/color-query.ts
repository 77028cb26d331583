import { z } from 'zod';
import { HEX_COLOR } from '@edge-image-search/contract/lab';
import { invalidParameter } from '../http/envelope';
import { readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import type { PaletteColor } from '../ports/inference/types';

const COLOR = /^([^:]*)(?::(.*))?$/;

/** docs/api.md, GET /colorsearch; readColorQuery checks the values. */
export const COLOR_QUERY = {
  color: z
    .array(z.string())
    .min(1)
    .meta({
      description:
        '`<hex6>` or `<hex6>:<ratio>`, ratio an integer from 1 to 100 (equal shares when no colour has one). ' +
        'Repeatable or comma-separated; up to 5 colours unless the operator raised COLOR_SEARCH_MAX_COLORS.',
    }),
};

/**
 * `/colorsearch`'s `color` parameters: `<hex6>` or `<hex6>:<ratio>`, ratio an integer 1–100, at most
 * `maxColors`. With no ratio anywhere the colours share equally; a colour without a ratio among colours with one
 * gets their mean; the ratios are then normalised to sum to 1. A colour given twice adds up.
 */
export function readColorQuery(params: RequestParams, maxColors: number): PaletteColor[] {
  const raw = readParam(params, COLOR_QUERY, 'color')
    .flatMap((value) => value.split(','))
    .filter((value) => value.trim() !== '');
  if (raw.length === 0) throw invalidParameter('color is required: a 6-digit hex color, optionally with :ratio.');
  if (raw.length > maxColors) throw invalidParameter(`At most ${maxColors} colors are allowed.`);

  const parsed = raw.map((value) => {
    const [, hex = '', ratio] = COLOR.exec(value.trim())!;
    if (!HEX_COLOR.test(hex)) throw invalidParameter(`Invalid color ${value}: use a 6-digit hex color such as ff0000.`);
    if (ratio === undefined) return { hex: hex.toLowerCase(), ratio: undefined };
    if (!/^\d{1,3}$/.test(ratio) || Number(ratio) < 1 || Number(ratio) > 100) {
      throw invalidParameter(`Invalid ratio in ${value}: use an integer from 1 to 100.`);
    }
    return { hex: hex.toLowerCase(), ratio: Number(ratio) };
  });
  const given = parsed.flatMap((color) => (color.ratio === undefined ? [] : [color.ratio]));
  const fallback = given.length === 0 ? 1 : given.reduce((sum, ratio) => sum + ratio, 0) / given.length;

  const merged = new Map<string, number>();
  for (const color of parsed) merged.set(color.hex, (merged.get(color.hex) ?? 0) + (color.ratio ?? fallback));
  const total = [...merged.values()].reduce((sum, ratio) => sum + ratio, 0);
  return [...merged].map(([hex, ratio]) => ({ hex, ratio: ratio / total }));
}
