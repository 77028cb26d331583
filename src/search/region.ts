import { z } from 'zod';
import { invalidParameter } from '../http/envelope';
import { readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import type { Box } from '../ports/inference/types';

export type Point = [number, number];
/** The part of the query image a search looks at: all of it, a box, or the objects at some points. */
export type Region = { kind: 'whole' } | { kind: 'box'; box: Box } | { kind: 'points'; points: Point[] };

/** docs/api.md, POST /discoversearch: up to 5 stacked points. */
export const MAX_POINTS = 5;

const BOX = /^(\d{1,6}),(\d{1,6}),(\d{1,6}),(\d{1,6})$/;
const POINT = /^(\d{1,6}),(\d{1,6})$/;

/** docs/api.md, POST /uploadsearch and POST /discoversearch; readRegion checks them with its own messages, in its own order. */
export const REGION = {
  box: z
    .string()
    .regex(BOX)
    .optional()
    .meta({
      description:
        'Searches only this area: `x1,y1,x2,y2` in the original image\'s pixels, (0,0) top-left, no spaces. ' +
        'A box of zero width and height is a point.',
    }),
  point: z
    .array(z.string().regex(POINT))
    .max(MAX_POINTS)
    .default([])
    .meta({ description: 'The object at `x,y` (pixels, (0,0) top-left) is searched. Repeatable; not with `box`.' }),
};

/** `box=x1,y1,x2,y2` (no spaces) and `point=x,y` (repeatable); a box of zero width and height is a point. */
export function readRegion(params: RequestParams, options: { allowPoints: boolean }): Region {
  const rawBox = readParam(params, REGION, 'box');
  const rawPoints = options.allowPoints ? readParam(params, REGION, 'point') : [];
  if (rawBox !== undefined && rawPoints.length > 0) throw invalidParameter('box and point cannot be used together.');
  if (rawBox !== undefined) {
    const match = BOX.exec(rawBox);
    if (!match) throw invalidParameter('box must be x1,y1,x2,y2: four non-negative integers, no spaces.');
    const [x1, y1, x2, y2] = match.slice(1).map(Number) as Box;
    if (x1 === x2 && y1 === y2) return { kind: 'points', points: [[x1, y1]] };
    if (x2 <= x1 || y2 <= y1) throw invalidParameter('box must have x1 < x2 and y1 < y2.');
    return { kind: 'box', box: [x1, y1, x2, y2] };
  }
  if (rawPoints.length > MAX_POINTS) throw invalidParameter(`At most ${MAX_POINTS} points are allowed.`);
  if (rawPoints.length > 0) {
    return {
      kind: 'points',
      points: rawPoints.map((raw) => {
        const match = POINT.exec(raw);
        if (!match) throw invalidParameter('point must be x,y: two non-negative integers, no spaces.');
        return [Number(match[1]), Number(match[2])];
      }),
    };
  }
  return { kind: 'whole' };
}

export const contains = (box: Box, [x, y]: Point): boolean => x >= box[0] && x <= box[2] && y >= box[1] && y <= box[3];
