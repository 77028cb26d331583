import sharp, { type Region, type Sharp } from 'sharp';

/**
 * The near-duplicate copies `npm run eval` searches with: seeded, so every run makes the same bytes. Inputs are the
 * originals flattened onto white (as the service sees them); outputs are lossless PNG unless JPEG is the point.
 */

export type Size = { width: number; height: number };
export type Transform = {
  name: string;
  /** What it does, for the report. */
  description: string;
  /** Random transforms are drawn more than once per image to steady the numbers. */
  draws: number;
  apply: (image: Buffer, size: Size, random: () => number) => Promise<Buffer>;
};

const WHITE = '#ffffff';

export const TRANSFORMS: Transform[] = [
  {
    name: 'crop',
    description: 'a window of 60-90 % of each side at a random position (at least 100 px on the longer side)',
    draws: 2,
    apply: (image, size, random) => png(sharp(image).extract(randomCrop(size, random))),
  },
  { name: 'flip', description: 'horizontal mirror', draws: 1, apply: (image) => png(sharp(image).flop()) },
  {
    name: 'jitter',
    description: 'brightness x0.75-1.25, contrast x0.7-1.3 (around mid grey), saturation x0.6-1.4',
    draws: 1,
    apply: (image, _size, random) => png(jitter(sharp(image), random)),
  },
  {
    name: 'jpeg',
    description: 'JPEG at quality 10-30',
    draws: 1,
    apply: (image, _size, random) => sharp(image).jpeg({ quality: randomQuality(random) }).toBuffer(),
  },
  {
    name: 'rotate',
    description: 'rotation by 10-15 degrees either way, corners white',
    draws: 1,
    apply: (image, _size, random) => png(sharp(image).rotate(randomAngle(random), { background: WHITE })),
  },
  {
    name: 'combined',
    description: 'crop, flip, jitter, rotation and JPEG together, in that order',
    draws: 3,
    apply: async (image, size, random) => {
      const cropped = await png(jitter(sharp(image).extract(randomCrop(size, random)).flop(), random));
      // A second pipeline: within one, sharp would rotate before cropping.
      return sharp(cropped).rotate(randomAngle(random), { background: WHITE }).jpeg({ quality: randomQuality(random) }).toBuffer();
    },
  },
];

/** The original as the copies start from: alpha flattened onto white, as PNG. */
export async function flattenedOriginal(bytes: Buffer): Promise<{ image: Buffer; size: Size }> {
  const { data, info } = await sharp(bytes).flatten({ background: WHITE }).png().toBuffer({ resolveWithObject: true });
  return { image: data, size: info };
}

/**
 * A window of 60-90 % of each side at a random position, but never under the spec's 100 px on the longer side (a
 * smaller copy would be an invalid query): small cut-outs keep more.
 */
function randomCrop({ width, height }: Size, random: () => number): Region {
  const share = Math.max(0.6 + 0.3 * random(), Math.min(1, 100 / Math.max(width, height)));
  const cropWidth = Math.round(width * share);
  const cropHeight = Math.round(height * share);
  return {
    left: Math.floor(random() * (width - cropWidth + 1)),
    top: Math.floor(random() * (height - cropHeight + 1)),
    width: cropWidth,
    height: cropHeight,
  };
}

function jitter(image: Sharp, random: () => number): Sharp {
  const contrast = 0.7 + 0.6 * random();
  return image
    .modulate({ brightness: 0.75 + 0.5 * random(), saturation: 0.6 + 0.8 * random() })
    .linear(contrast, 128 * (1 - contrast));
}

const randomQuality = (random: () => number): number => 10 + Math.floor(21 * random());

const randomAngle = (random: () => number): number => (random() < 0.5 ? -1 : 1) * (10 + 5 * random());

const png = (image: Sharp): Promise<Buffer> => image.png().toBuffer();
