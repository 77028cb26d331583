/**
 * Chooses the embedding reduction by measurement. Embeds the real test images
 * and transformed copies of them (the near-duplicates `npm run eval` searches
 * with), then reports per transform how often a
 * copy's most similar original (cosine) is its own (R@1), for the raw 1792-d
 * feature and for each reduction candidate. Nothing is fitted on the images.
 *
 *   node inference/scripts/measure-embedding.ts > table.md     (~6 min, 1 core)
 *
 * IMAGES_DIR overrides the image folder (default: test/fixtures/images of
 * the project root); INFERENCE_RUNTIME the engine (as for the service).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { flattenedOriginal, TRANSFORMS } from '@edge-image-search/devtools/near-duplicates';
import { decodeImage } from '../src/image/decode.ts';
import type { ResizeFit } from '../src/image/resize.ts';
import { wholeImage } from '../src/image/view.ts';
import { loadEmbedder } from '../src/models/embed/embedder.ts';
import { EMBEDDER_SPECS } from '../src/models/embed/embedder-specs.ts';
import { MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, toMobileNetV2Input } from '../src/models/embed/mobilenet-v2.ts';
import { averagePool, l2Normalize } from '../src/models/embed/vector.ts';
import { seededRandom } from '../src/random.ts';
import { createRuntime } from '../src/runtime/select.ts';
import {
  gaussianProjection,
  generalizedMeanPool,
  minusMean,
  orthogonalProjection,
  project,
  signedPower,
  type Projection,
} from './reduction-candidates.ts';

import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
/** The spec calls images under 100 px on both sides invalid; the service never embeds them. */
const MIN_SIDE = 100;
const SEED = 20240601;

type Features = { pooled: Float32Array; gem3: Float64Array; bottleneck: Float64Array };
type Candidate = { name: string; dim: number; reduce: (features: Features) => Float32Array };

const orthogonal1536 = orthogonalProjection(1792, 1536, SEED);
const orthogonal1024 = orthogonalProjection(1792, 1024, SEED);
const orthogonal1088 = orthogonalProjection(1792, 1536 - 448, SEED);
const gaussian1536 = gaussianProjection(1792, 1536, SEED);
const reduceWith = (projection: Projection, vector: ArrayLike<number>) => l2Normalize(project(projection, vector));
const sqrt = (vector: ArrayLike<number>) => signedPower(vector, 0.5);

const CANDIDATES: Candidate[] = [
  { name: 'avg pool, raw (reference, too long)', dim: 1792, reduce: (f) => l2Normalize(f.pooled) },
  { name: 'avg pool, truncate', dim: 1536, reduce: (f) => l2Normalize(f.pooled.subarray(0, 1536)) },
  { name: 'avg pool, gaussian projection', dim: 1536, reduce: (f) => reduceWith(gaussian1536, f.pooled) },
  { name: 'avg pool, orthogonal projection', dim: 1536, reduce: (f) => reduceWith(orthogonal1536, f.pooled) },
  { name: 'avg pool, orthogonal projection', dim: 1024, reduce: (f) => reduceWith(orthogonal1024, f.pooled) },
  { name: 'avg pool, signed sqrt, orthogonal', dim: 1536, reduce: (f) => reduceWith(orthogonal1536, sqrt(f.pooled)) },
  { name: 'avg pool minus its mean, orthogonal', dim: 1536, reduce: (f) => reduceWith(orthogonal1536, minusMean(f.pooled)) },
  { name: 'GeM p=3, orthogonal', dim: 1536, reduce: (f) => reduceWith(orthogonal1536, f.gem3) },
  { name: "**last bottleneck avg pool (the service's per-view feature)**", dim: 448, reduce: (f) => l2Normalize(f.bottleneck) },
  { name: 'last bottleneck avg, signed sqrt', dim: 448, reduce: (f) => l2Normalize(sqrt(f.bottleneck)) },
  {
    name: 'bottleneck avg ++ avg pool orthogonal 1088',
    dim: 1536,
    reduce: (f) => l2Normalize([...l2Normalize(f.bottleneck), ...reduceWith(orthogonal1088, f.pooled)]),
  },
];
/** The service uses 'fill' (nsfwjs's own preprocessing); 'cover' is measured for comparison. */
const FITS: ResizeFit[] = ['fill', 'cover'];

const runtime = await createRuntime();
const session = await runtime.load(MOBILENET_V2_SOURCE);
const outputNames = [MOBILENET_V2_NODES.pooled, MOBILENET_V2_NODES.lastConv, MOBILENET_V2_NODES.lastBottleneck];

async function extractFeatures(bytes: Uint8Array): Promise<Map<ResizeFit, Features>> {
  const image = await decodeImage(bytes);
  const byFit = new Map<ResizeFit, Features>();
  for (const fit of FITS) {
    const outputs = await session.run(await toMobileNetV2Input(image.pixels, fit), outputNames);
    byFit.set(fit, {
      pooled: outputs.get(MOBILENET_V2_NODES.pooled)!.data,
      gem3: generalizedMeanPool(outputs.get(MOBILENET_V2_NODES.lastConv)!, 3),
      bottleneck: averagePool(outputs.get(MOBILENET_V2_NODES.lastBottleneck)!),
    });
  }
  return byFit;
}

type Sample = { imageIndex: number; features: Map<ResizeFit, Features> };
type Entry = { file: string; kind: string; category: string };

const images = await listImages();
console.error(`${images.length} images from ${IMAGES_DIR}; ${runtime.description}`);
const originals: Sample[] = [];
const copies = new Map<string, Sample[]>(TRANSFORMS.map((t) => [t.name, []]));
const started = performance.now();
for (const [imageIndex, image] of images.entries()) {
  const bytes = await readFile(path.join(IMAGES_DIR, image.file));
  originals.push({ imageIndex, features: await extractFeatures(bytes) });
  const { image: flattened, size } = await flattenedOriginal(bytes);
  for (const [transformIndex, transform] of TRANSFORMS.entries()) {
    // Each (image, transform) pair has its own random stream, whatever runs before it.
    const random = seededRandom(SEED + imageIndex * TRANSFORMS.length + transformIndex);
    for (let draw = 0; draw < transform.draws; draw++) {
      const copy = await transform.apply(flattened, size, random);
      copies.get(transform.name)!.push({ imageIndex, features: await extractFeatures(copy) });
    }
  }
  if ((imageIndex + 1) % 20 === 0) console.error(`${imageIndex + 1}/${images.length}`);
}
console.error(`features extracted in ${((performance.now() - started) / 1000).toFixed(0)} s`);

const columns = [...TRANSFORMS.map((t) => `${t.name} (${t.draws * images.length})`), 'mean R@1', 'category NN'];
console.log(`| features -> stored vector | dim | resize | ${columns.join(' | ')} |`);
console.log(`| --- | --- | --- | ${columns.map(() => '---').join(' | ')} |`);
for (const candidate of CANDIDATES) {
  for (const fit of FITS) {
    const embed = (sample: Sample) => candidate.reduce(sample.features.get(fit)!);
    const gallery = originals.map(embed);
    const recalls = TRANSFORMS.map((t) => recallAt1(copies.get(t.name)!.map((s) => ({ s, v: embed(s) })), gallery));
    const cells = [...recalls, mean(recalls)].map(percent);
    console.log(`| ${candidate.name} | ${candidate.dim} | ${fit} | ${cells.join(' | ')} | ${percent(categoryNearestNeighbour(gallery))} |`);
  }
}

// The service's own path (decode, views, infer, pool, join), timed on the originals, for each embedder it can load.
for (const spec of Object.values(EMBEDDER_SPECS)) {
  const embedder = await loadEmbedder(runtime, spec);
  const embedStarted = performance.now();
  for (const image of images) await embedder.predict(wholeImage(await decodeImage(await readFile(path.join(IMAGES_DIR, image.file)))));
  const msPerImage = (performance.now() - embedStarted) / images.length;
  console.log(`\n${embedder.modelId}: ${msPerImage.toFixed(1)} ms/image (decode + embed), ${runtime.description}`);
}

/** Share of copies whose most similar original is their own. */
function recallAt1(queries: { s: Sample; v: Float32Array }[], gallery: Float32Array[]): number {
  const hits = queries.filter(({ s, v }) => nearest(v, gallery) === s.imageIndex).length;
  return hits / queries.length;
}

/**
 * A rough semantic check: share of object cut-outs whose nearest other cut-out
 * has the same top-level category (animals, food, plants, ...).
 */
function categoryNearestNeighbour(gallery: Float32Array[]): number {
  const cutouts = images.flatMap((image, index) => (image.kind === 'object-cutout' ? [index] : []));
  const topCategory = (index: number) => images[index]!.category.split('/')[0];
  const hits = cutouts.filter((index) => {
    const others = cutouts.filter((other) => other !== index);
    const best = others[nearest(gallery[index]!, others.map((other) => gallery[other]!))]!;
    return topCategory(best) === topCategory(index);
  }).length;
  return hits / cutouts.length;
}

function nearest(query: Float32Array, gallery: Float32Array[]): number {
  let best = -1;
  let bestSimilarity = -Infinity;
  for (const [index, item] of gallery.entries()) {
    // Vectors are unit length, so the dot product is the cosine.
    let similarity = 0;
    for (let i = 0; i < item.length; i++) similarity += query[i]! * item[i]!;
    if (similarity > bestSimilarity) [best, bestSimilarity] = [index, similarity];
  }
  return best;
}

async function listImages(): Promise<Entry[]> {
  const manifest = JSON.parse(await readFile(path.join(IMAGES_DIR, 'manifest.json'), 'utf8')) as Entry[];
  // The manifest names two files twice; the folder holds one of each.
  const unique = [...new Map(manifest.map((entry) => [entry.file, entry])).values()];
  const usable: Entry[] = [];
  for (const entry of unique) {
    const { width = 0, height = 0 } = await sharp(path.join(IMAGES_DIR, entry.file)).metadata();
    if (width >= MIN_SIDE || height >= MIN_SIDE) usable.push(entry);
  }
  return usable;
}

function mean(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

function percent(share: number): string {
  return (share * 100).toFixed(1);
}
