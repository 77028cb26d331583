/**
 * Times the embedder and the detector on each runtime, on the same real
 * images, after the models' warm-up: the network alone (one fixed input,
 * also as a batch of 8 for the embedder; medians of many calls) and the
 * model's whole step per image (resize or letterbox + network + pooling or
 * decoding; the median of the rounds' means). Prints a Markdown table for
 * README.md.
 *
 *   node inference/scripts/measure-runtimes.ts [--images 30] [--rounds 3]
 *
 * IMAGES_DIR overrides the image folder (default: shared/data/images beside
 * the project root). The ONNX models must be converted (npm run convert-models -w inference).
 */
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import { CENTERNET_SOURCE, loadCenterNet, toCenterNetInput } from '../src/models/detect/centernet.ts';
import { loadEmbedder } from '../src/models/embed/embedder.ts';
import { MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, toMobileNetV2Input } from '../src/models/embed/mobilenet-v2.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, Runtime } from '../src/runtime/runtime.ts';
import { createTfjsWasmRuntime } from '../src/runtime/tfjs-wasm.ts';

const IMAGES_DIR = process.env.IMAGES_DIR ?? path.resolve(import.meta.dirname, '../../../shared/data/images');
const { values } = parseArgs({ options: { images: { type: 'string', default: '30' }, rounds: { type: 'string', default: '3' } } });
const BATCH = 8;

const files = (await readdir(IMAGES_DIR)).filter((file) => /\.(jpe?g|png)$/i.test(file)).sort().slice(0, Number(values.images));
const images: RgbPixels[] = [];
for (const file of files) images.push((await decodeImage(await readFile(path.join(IMAGES_DIR, file)))).pixels);
const rounds = Number(values.rounds);

const threads = availableParallelism();
const runtimes: [string, () => Promise<Runtime>][] = [
  ['tfjs-wasm', createTfjsWasmRuntime],
  ['onnx, 1 thread', () => createOnnxRuntime({ intraOpThreads: 1 })],
];
if (threads > 1) runtimes.push([`onnx, ${threads} threads`, () => createOnnxRuntime({ intraOpThreads: threads })]);

console.error(`${images.length} images from ${IMAGES_DIR}, ${rounds} rounds, ${threads} cores`);
console.log('| runtime | embed network | embed network, batch of 8 (per image) | embed step | detect network | detect step |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [label, create] of runtimes) {
  const runtime = await create();
  const embedder = await loadEmbedder(runtime);
  const detector = await loadCenterNet(runtime);
  const embedSession = await runtime.load(MOBILENET_V2_SOURCE);
  const detectSession = await runtime.load(CENTERNET_SOURCE);
  const embedInput = await toMobileNetV2Input(images[0]!, 'fill');
  const embedBatch = repeat(embedInput, BATCH);
  const detectInput = (await toCenterNetInput(images[0]!)).input;
  const bottleneck = [MOBILENET_V2_NODES.lastBottleneck];
  const columns = [
    await msPerCall(() => embedSession.run(embedInput, bottleneck), 40),
    (await msPerCall(() => embedSession.run(embedBatch, bottleneck), 9)) / BATCH,
    await msPerImage((pixels) => embedder.embed(pixels)),
    await msPerCall(() => detectSession.run(detectInput, CENTERNET_SOURCE.outputs), 15),
    await msPerImage((pixels) => detector.detect(pixels, 0.2)),
  ];
  console.log(`| ${label}: ${runtime.description} | ${columns.map((ms) => ms.toFixed(1)).join(' | ')} |`);
}

/** Median of `times` calls, after one more: the machine's other work shows as outliers. */
async function msPerCall(call: () => Promise<unknown>, times: number): Promise<number> {
  await call();
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

/** Mean over the images of one round; the median round. */
async function msPerImage(step: (pixels: RgbPixels) => Promise<unknown>): Promise<number> {
  const means: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    for (const pixels of images) await step(pixels);
    means.push((performance.now() - started) / images.length);
  }
  return median(means);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function repeat(input: Float32Tensor, times: number): Float32Tensor {
  const data = new Float32Array(input.data.length * times);
  for (let i = 0; i < times; i++) data.set(input.data, i * input.data.length);
  return { data, shape: [times, ...input.shape.slice(1)] };
}
