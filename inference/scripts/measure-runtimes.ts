/**
 * Times the embedder, the detector and the pose model on each runtime, on the same real
 * images, after the models' warm-up: the network alone (one fixed input,
 * also as a batch of 8 for the embedder; medians of many calls) and the
 * model's whole step per image (resize or letterbox + network + pooling or
 * decoding; the median of the rounds' means). The embedder is the service's
 * default, INFERENCE_EMBED_MODELS's first: its "network" is the sum of its
 * networks' runs on one view (MobileNetV2 alone for mobilenet-v2). Prints a
 * Markdown table for README.md; `npm run bench` (scripts/bench.ts) imports
 * the same functions.
 *
 *   node inference/scripts/measure-runtimes.ts [--images 30] [--rounds 3]
 *   INFERENCE_EMBED_MODELS=fused node inference/scripts/measure-runtimes.ts
 *
 * IMAGES_DIR overrides the image folder (default: test/fixtures/images of
 * the project root). The ONNX models must be converted (npm run convert-models -w inference).
 */
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import { CENTERNET_SOURCE, loadCenterNet, toCenterNetInput } from '../src/models/detect/centernet.ts';
import { loadEmbedder, type EmbedderSpec } from '../src/models/embed/embedder.ts';
import { embedViews, type EmbedNetwork } from '../src/models/embed/features.ts';
import { loadMoveNet, MOVENET_SOURCE, toMoveNetInput } from '../src/models/pose/movenet.ts';
import { builtInSpec, modelSetFromEnv } from '../src/models/registry.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, InferenceSession, Runtime } from '../src/runtime/runtime.ts';
import { createTfjsWasmRuntime } from '../src/runtime/tfjs-wasm.ts';

import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
const BATCH = 8;

/** One runtime's timings, ms per image. */
export type RuntimeTimings = {
  runtime: string;
  description: string;
  /** The embedder timed: its model id. */
  embedModel: string;
  /** Each of its networks run once on one view, added up. */
  embedNetwork: number;
  embedNetworkBatchOf8: number;
  embedStep: number;
  detectNetwork: number;
  detectStep: number;
  /** Per person: the step takes the whole image as the person's box (crop, resize, network), whatever it shows. */
  poseNetwork: number;
  poseStep: number;
};

/** The first `images` JPEG and PNG files of `dir`, in name order, decoded as the service decodes them. */
export async function loadImages(dir: string, images: number): Promise<RgbPixels[]> {
  const files = (await readdir(dir)).filter((file) => /\.(jpe?g|png)$/i.test(file)).sort().slice(0, images);
  const decoded: RgbPixels[] = [];
  for (const file of files) decoded.push((await decodeImage(await readFile(path.join(dir, file)))).pixels);
  return decoded;
}

/** tfjs-wasm, ONNX Runtime on one thread, and on every core where there are several. */
export function runtimesToMeasure(): [string, () => Promise<Runtime>][] {
  const threads = availableParallelism();
  const runtimes: [string, () => Promise<Runtime>][] = [
    ['tfjs-wasm', createTfjsWasmRuntime],
    ['onnx, 1 thread', () => createOnnxRuntime({ intraOpThreads: 1 })],
  ];
  if (threads > 1) runtimes.push([`onnx, ${threads} threads`, () => createOnnxRuntime({ intraOpThreads: threads })]);
  return runtimes;
}

/** The embedder the service serves by default: INFERENCE_EMBED_MODELS's first. */
const defaultEmbedder = (): EmbedderSpec => builtInSpec(modelSetFromEnv().embedders[0]);

export async function measureRuntime(
  label: string,
  create: () => Promise<Runtime>,
  images: RgbPixels[],
  rounds: number,
  embedderSpec = defaultEmbedder(),
): Promise<RuntimeTimings> {
  const runtime = await create();
  const embedder = await loadEmbedder(runtime, embedderSpec);
  const detector = await loadCenterNet(runtime);
  const view = (await embedViews(images[0]!))[0]!;
  const embedSessions: { network: EmbedNetwork; session: InferenceSession }[] = [];
  for (const network of embedderSpec.networks) embedSessions.push({ network, session: await runtime.load(network.source) });
  /** ms per call of each of the embedder's networks on the view repeated `batch` times, added up. */
  const embedNetworks = async (batch: number, times: number) => {
    let sum = 0;
    for (const { network, session } of embedSessions) {
      const input = repeat(network.toInput(view), batch);
      sum += await msPerCall(() => session.run(input, [network.node]), times);
    }
    return sum;
  };
  const detectSession = await runtime.load(CENTERNET_SOURCE);
  const pose = await loadMoveNet(runtime);
  const poseSession = await runtime.load(MOVENET_SOURCE);
  const poseInput = (await toMoveNetInput(images[0]!, [0, 0, images[0]!.width, images[0]!.height])).input;
  const detectInput = (await toCenterNetInput(images[0]!)).input;
  return {
    runtime: label,
    description: runtime.description,
    embedModel: embedder.modelId,
    embedNetwork: await embedNetworks(1, 40),
    embedNetworkBatchOf8: (await embedNetworks(BATCH, 9)) / BATCH,
    embedStep: await msPerImage(images, rounds, (pixels) => embedder.embed(pixels)),
    detectNetwork: await msPerCall(() => detectSession.run(detectInput, CENTERNET_SOURCE.outputs), 15),
    detectStep: await msPerImage(images, rounds, (pixels) => detector.detect(pixels, 0.2)),
    poseNetwork: await msPerCall(() => poseSession.run(poseInput, MOVENET_SOURCE.outputs), 20),
    poseStep: await msPerImage(images, rounds, (pixels) => pose.estimate(pixels, [0, 0, pixels.width, pixels.height])),
  };
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
async function msPerImage(images: RgbPixels[], rounds: number, step: (pixels: RgbPixels) => Promise<unknown>): Promise<number> {
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

if (import.meta.main) {
  const { values } = parseArgs({ options: { images: { type: 'string', default: '30' }, rounds: { type: 'string', default: '3' } } });
  const images = await loadImages(IMAGES_DIR, Number(values.images));
  const rounds = Number(values.rounds);
  console.error(`${images.length} images from ${IMAGES_DIR}, ${rounds} rounds, ${availableParallelism()} cores; embedder ${defaultEmbedder().modelId}`);
  console.log('| runtime | embed network | embed network, batch of 8 (per image) | embed step | detect network | detect step | pose network | pose step (per person) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const [label, create] of runtimesToMeasure()) {
    const t = await measureRuntime(label, create, images, rounds);
    const columns = [t.embedNetwork, t.embedNetworkBatchOf8, t.embedStep, t.detectNetwork, t.detectStep, t.poseNetwork, t.poseStep];
    console.log(`| ${label}: ${t.description} | ${columns.map((ms) => ms.toFixed(1)).join(' | ')} |`);
  }
}
