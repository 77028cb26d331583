/**
 * Runs the colors task on every test image and prints each palette, the
 * shares of the sampled grid left out as transparent and as border background,
 * and the time the palette took (the decoded
 * working copy in, the palette out; decoding not counted), then the timing
 * summary per kind of image: photos (JPEG) and cut-outs (the PNGs, products
 * and animals on white). Each image is measured REPEAT times after a warm-up;
 * the median counts (after the service's own start-up warm-up). Used for the
 * Colours section of README.md.
 *
 *   node inference/scripts/survey-colors.ts [--repeat 5] [--quiet]
 *
 * IMAGES_DIR overrides the image folder (default: test/fixtures/images of
 * the project root).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import { loadColorsTask } from '../src/models/colors/colors-task.ts';
import type { PaletteColor } from '@edge-image-search/contract/wire';
import { analyzeColors, dominantColors } from '../src/models/colors/palette.ts';

import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
const { values } = parseArgs({ options: { repeat: { type: 'string', default: '5' }, quiet: { type: 'boolean', default: false } } });
const repeat = Math.max(1, Number(values.repeat));

// The service's start-up warm-up, so the first images are timed as the service would run them.
loadColorsTask();
const files = (await readdir(IMAGES_DIR)).filter((file) => /\.(jpe?g|png)$/i.test(file)).sort();
const rows: ReturnType<typeof measure>[] = [];
for (const file of files) {
  const bytes = await readFile(path.join(IMAGES_DIR, file));
  const image = await decodeImage(bytes);
  const kind = /\.png$/i.test(file) ? 'cut-out' : 'photo';
  rows.push(measure(file, kind, image.pixels));
}
// The working copy's largest case: a photo upscaled to 2048 px (the cap), and the same with transparency.
const coffee = await readFile(path.join(IMAGES_DIR, 'skimage_coffee.jpg'));
const big = await decodeImage(await sharp(coffee).resize({ width: 2048 }).jpeg().toBuffer());
rows.push(measure('skimage_coffee.jpg at 2048x1365', 'large', big.pixels));
const tiger = await readFile(path.join(IMAGES_DIR, 'animals_mammals_cats_tiger.png'));
const bigAlpha = await decodeImage(await sharp(tiger).resize({ width: 2048 }).unflatten().png().toBuffer());
rows.push(measure('animals_mammals_cats_tiger.png at 2048 px, white made transparent', 'large', bigAlpha.pixels));

if (!values.quiet) {
  console.log(`${'image'.padEnd(50)} ${'ms'.padStart(6)}  transp  bg    palette (hex ratio)`);
  for (const { file, ms, palette, transparent, background } of rows) {
    const shares = `${transparent.toFixed(2)}  ${background.toFixed(2)}`;
    console.log(`${file.padEnd(50)} ${ms.toFixed(2).padStart(6)}  ${shares}  ${palette.map((c) => `${c.hex} ${c.ratio.toFixed(3)}`).join('  ')}`);
  }
  console.log();
}
for (const kind of ['photo', 'cut-out', 'large'] as const) {
  const of = rows.filter((row) => row.kind === kind);
  const ms = of.map((row) => row.ms).sort((a, b) => a - b);
  const colours = of.map((row) => row.palette.length);
  console.log(
    `${kind.padEnd(8)} ${String(of.length).padStart(3)} images: mean ${mean(ms).toFixed(2)} ms, median ${ms[ms.length >> 1]!.toFixed(2)}, max ${ms.at(-1)!.toFixed(2)}; ` +
      `colours ${Math.min(...colours)}-${Math.max(...colours)} (mean ${mean(colours).toFixed(1)}); ` +
      `background removed in ${of.filter((row) => row.background > 0).length}`,
  );
}

function measure(file: string, kind: 'photo' | 'cut-out' | 'large', pixels: RgbPixels) {
  dominantColors(pixels);
  const times: number[] = [];
  let palette: PaletteColor[] = [];
  for (let i = 0; i < repeat; i++) {
    const started = performance.now();
    palette = dominantColors(pixels);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const { transparent, background } = analyzeColors(pixels);
  return { file, kind, pixels: pixels.width * pixels.height, ms: times[times.length >> 1]!, palette, transparent, background };
}

function mean(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}
