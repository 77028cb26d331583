/**
 * Detected objects' attributes (docs/decisions.md, "Product types and attributes"): the colour names an object's
 * `color` may take, how one is named from its palette, and the zero-shot rule for the other attributes. Shared by the
 * inference service, which judges attributes, and the Worker, which checks an application's `attributes_list`.
 */
import { deltaE, hexToLab, type Lab } from './lab.ts';

/**
 * The basic colour names a shopper uses, each with the sRGB colour it stands for: a palette's colour takes the name
 * of the nearest of these in CIELAB. Ordered as listed to a client.
 */
export const COLOR_REFERENCES = {
  black: '000000',
  grey: '808080',
  white: 'ffffff',
  red: 'cc0000',
  orange: 'ff8c00',
  yellow: 'ffd700',
  green: '228b22',
  blue: '0047ff',
  navy: '000080',
  purple: '800080',
  pink: 'ff69b4',
  brown: '8b4513',
  beige: 'e8d9b5',
} as const;

export type ColorName = keyof typeof COLOR_REFERENCES;
export const COLOR_NAMES = Object.keys(COLOR_REFERENCES) as ColorName[];

export const isColorName = (name: string): name is ColorName => Object.hasOwn(COLOR_REFERENCES, name);

const REFERENCE_LAB = new Map<string, Lab>(Object.entries(COLOR_REFERENCES).map(([name, hex]) => [name, hexToLab(hex)]));

/** The attribute named from the palette rather than by a text model. */
export const COLOR_ATTRIBUTE = 'color';

/**
 * The name of a palette's dominant colour (its first, by share) among `allowed` names: the nearest in CIELAB (CIE76).
 * Undefined for an empty palette or no allowed name the service knows.
 */
export function nameColor(palette: readonly { hex: string; ratio: number }[], allowed: readonly string[] = COLOR_NAMES): string | undefined {
  const dominant = palette[0];
  if (!dominant) return undefined;
  const lab = hexToLab(dominant.hex);
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of allowed) {
    const reference = REFERENCE_LAB.get(name);
    const distance = reference ? deltaE(lab, reference) : Number.POSITIVE_INFINITY;
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

/**
 * The text a zero-shot attribute value is judged by, against the object's crop embedding: `a photo of a {value}
 * {type}` in lower case (CLIP's own prompt form).
 */
export const attributePrompt = (value: string, type: string): string => `a photo of a ${value} ${type}`.toLowerCase();

/**
 * A zero-shot value is given only when its cosine with the crop beats the runner-up's by this much (at CLIP's logit
 * scale of 100, odds of about 2.7 to 1); otherwise the attribute is left out.
 */
export const ZERO_SHOT_MARGIN = 0.01;

/** The attribute values a type may take when an application names none: its colour, from the palette. */
export const DEFAULT_ATTRIBUTES_LIST: Readonly<Record<string, readonly string[]>> = { [COLOR_ATTRIBUTE]: COLOR_NAMES };
