import type { Box } from '../../image/view.ts';
import type { Keypoint, KeypointName } from './movenet.ts';

/**
 * Where one person's garments are, from the person's keypoints (movenet.ts):
 * boxes drawn around the joints each garment covers, widened by shares of the
 * body's own lengths (the joints lie inside the limbs, and clothes reach past
 * them), clamped inside the person's box.
 */

/** The types a person's pose gives, in the order garmentBoxes may report them. */
export const GARMENT_LABELS = ['Top', 'Bottom', 'Shoe'] as const;
export type GarmentLabel = (typeof GARMENT_LABELS)[number];

export type Garment = {
  readonly label: GarmentLabel;
  /** [x1, y1, x2, y2] in the keypoints' pixels, whole pixels, inside the person's box. */
  readonly box: Box;
  /** The mean score of the keypoints that place it (shoulders and hips, or both shoulders alone; hips and legs; the ankle): 0-1. */
  readonly confidence: number;
};

/**
 * Keypoints scoring below this are left out. On the test photos the joints
 * MoveNet cannot see (legs below the frame, a player too small to make out)
 * score 0.07-0.29, the visible ones mostly 0.35-0.9; 0.3 is also the keypoint
 * floor of tfjs-models' pose-detection demo for MoveNet.
 */
export const MIN_KEYPOINT_SCORE = 0.3;

/** Boxes narrower or shorter than this many pixels are dropped: too little to show a garment. */
export const MIN_GARMENT_SIDE = 8;

/** Top: shares of the torso's length (shoulders' midpoint to hips') added above the shoulders, below the hips and to the sides. */
const TOP_MARGIN = { above: 0.15, below: 0.1, side: 0.15 };
/**
 * The torso's length per shoulder width (shoulder to shoulder), for a person whose hips are not seen: 1.1 (the
 * astronaut) to 1.9 (the standing player) on the test photos. The low end, so that hips hidden inside the picture
 * (behind a table or another person) are not taken for hips below it.
 */
const TORSO_PER_SHOULDER_WIDTH = 1.1;
/** Bottom: shares of the thigh's length added above the hips (the waist), below the lowest joint and to the sides. */
const BOTTOM_MARGIN = { above: 0.25, below: 0.15, side: 0.3 };
/**
 * Shoe: shares of the lower leg's length (knee to ankle) around the ankle. A foot is about 0.6 of it long and may
 * point either way, so the box reaches that far to both sides; it lies mostly below the ankle.
 */
const SHOE_EXTENT = { above: 0.15, below: 0.35, side: 0.4 };

type Point = { readonly x: number; readonly y: number };
type Scored = Point & { readonly score: number };
type Side = 'left' | 'right';
type Joint = 'shoulder' | 'elbow' | 'wrist' | 'hip' | 'knee' | 'ankle';
const SIDES: readonly Side[] = ['left', 'right'];

/**
 * The garment boxes one person's confident keypoints support, top to bottom:
 * - Top: shoulders to hips, widened to the elbows and wrists above the hips
 *   (sleeves); needs a shoulder and a hip, or both shoulders where the hips
 *   are below the picture (a head-and-shoulders framing): then it runs to
 *   the picture's bottom edge.
 * - Bottom: hips to the ankles, or to the knees where no ankle shows; needs a
 *   hip and a knee or an ankle.
 * - Shoe: one per ankle, around and below it, sized from the lower leg (knee
 *   to ankle, that side's, else the other's); needs the ankle and a lower leg.
 * `personBox` is the person's box in the same pixels (e.g. a detection), within an image of `width` x `height`.
 */
export function garmentBoxes(keypoints: readonly Keypoint[], personBox: Box, width: number, height: number): Garment[] {
  const seen = new Map<KeypointName, Scored>();
  for (const keypoint of keypoints) if (keypoint.score >= MIN_KEYPOINT_SCORE) seen.set(keypoint.name, keypoint);
  const at = (side: Side, joint: Joint): Scored | undefined => seen.get(`${side}_${joint}`);
  const both = (joint: Joint): Scored[] => SIDES.flatMap((side) => at(side, joint) ?? []);
  const bounds: Box = [
    Math.max(0, Math.ceil(personBox[0])),
    Math.max(0, Math.ceil(personBox[1])),
    Math.min(width, Math.floor(personBox[2])),
    Math.min(height, Math.floor(personBox[3])),
  ];
  const garments: Garment[] = [];
  const add = (label: GarmentLabel, box: Box, placedBy: readonly Scored[]) => {
    const fitted = fit(box, bounds);
    const confidence = placedBy.reduce((sum, point) => sum + point.score, 0) / placedBy.length;
    if (fitted) garments.push({ label, box: fitted, confidence });
  };

  const [shoulders, hips, knees, ankles] = [both('shoulder'), both('hip'), both('knee'), both('ankle')];
  const torso = placeTorso(shoulders, hips, height);
  if (torso) {
    const { length, lowestHip } = torso;
    const sleeves = [...both('elbow'), ...both('wrist')].filter((point) => point.y < lowestHip);
    const [x1, , x2] = extent([...shoulders, ...hips, ...sleeves]);
    const top = Math.min(...shoulders.map((shoulder) => shoulder.y));
    const side = TOP_MARGIN.side * length;
    add('Top', [x1 - side, top - TOP_MARGIN.above * length, x2 + side, lowestHip + TOP_MARGIN.below * length], [...shoulders, ...hips]);
  }

  const feet = ankles.length > 0 ? ankles : knees;
  if (hips.length > 0 && feet.length > 0) {
    // The knee sits about halfway down the leg.
    const thigh = knees.length > 0 ? distance(middle(hips), middle(knees)) : distance(middle(hips), middle(ankles)) / 2;
    const [x1, y1, x2, y2] = extent([...hips, ...knees, ...ankles]);
    const side = BOTTOM_MARGIN.side * thigh;
    add('Bottom', [x1 - side, y1 - BOTTOM_MARGIN.above * thigh, x2 + side, y2 + BOTTOM_MARGIN.below * thigh], [...hips, ...knees, ...ankles]);
  }

  const lowerLeg = (side: Side): number | undefined => {
    const [knee, ankle] = [at(side, 'knee'), at(side, 'ankle')];
    return knee && ankle ? distance(knee, ankle) : undefined;
  };
  for (const [index, side] of SIDES.entries()) {
    const ankle = at(side, 'ankle');
    // Both legs are the same length: the other one measures a leg whose knee is hidden.
    const length = lowerLeg(side) ?? lowerLeg(SIDES[1 - index]!);
    if (!ankle || length === undefined) continue;
    const reach = SHOE_EXTENT.side * length;
    add('Shoe', [ankle.x - reach, ankle.y - SHOE_EXTENT.above * length, ankle.x + reach, ankle.y + SHOE_EXTENT.below * length], [ankle]);
  }

  return garments.sort((a, b) => a.box[1] - b.box[1] || a.box[0] - b.box[0]);
}

/**
 * The torso's length and the lowest hip's height, from the shoulders and hips seen. With no hip seen, both shoulders
 * measure the torso; if that puts the hips below the picture (a head-and-shoulders framing, not hips merely hidden),
 * they are taken at its bottom edge `height`. Undefined where the torso cannot be placed.
 */
function placeTorso(shoulders: readonly Scored[], hips: readonly Scored[], height: number): { length: number; lowestHip: number } | undefined {
  if (shoulders.length === 0) return undefined;
  if (hips.length > 0) return { length: distance(middle(shoulders), middle(hips)), lowestHip: Math.max(...hips.map((hip) => hip.y)) };
  if (shoulders.length < 2) return undefined;
  const length = TORSO_PER_SHOULDER_WIDTH * distance(shoulders[0]!, shoulders[1]!);
  return middle(shoulders).y + length > height ? { length, lowestHip: height } : undefined;
}

/** The box rounded to whole pixels inside `bounds`; null when it is left smaller than MIN_GARMENT_SIDE. */
function fit(box: Box, bounds: Box): Box | null {
  const x1 = Math.max(bounds[0], Math.round(box[0]));
  const y1 = Math.max(bounds[1], Math.round(box[1]));
  const x2 = Math.min(bounds[2], Math.round(box[2]));
  const y2 = Math.min(bounds[3], Math.round(box[3]));
  return x2 - x1 >= MIN_GARMENT_SIDE && y2 - y1 >= MIN_GARMENT_SIDE ? [x1, y1, x2, y2] : null;
}

function extent(points: readonly Point[]): Box {
  const xs = points.map((point) => point.x);
  const ys = points.map((point) => point.y);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

function middle(points: readonly Point[]): Point {
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  return { x: mean(points.map((point) => point.x)), y: mean(points.map((point) => point.y)) };
}

function distance(a: Point, b: Point): number {
  return Math.hypot(a.x - b.x, a.y - b.y);
}
