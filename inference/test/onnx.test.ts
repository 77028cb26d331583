/**
 * The ONNX path: the converted models against tfjs-wasm on real images (both
 * embedders' vectors, CenterNet's detections), each embedding made of its
 * networks' parts, the whitening file, batches, the converter on hand-made
 * graphs (an unsupported op, pruning, a free batch dimension), the runtime's
 * refusals, and runtime selection in the real service.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { io } from '@tensorflow/tfjs';
import ort from 'onnxruntime-node';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import { CENTERNET_SOURCE, CenterNetDetector, toCenterNetInput } from '../src/models/detect/centernet.ts';
import type { Detection } from '../src/models/detect/detector.ts';
import { SpecEmbedder, type EmbedderSpec } from '../src/models/embed/embedder.ts';
import { FUSED_EMBEDDER, FUSED_PART_DIMS, MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { CENTERNET_BACKBONE_NETWORK, embedViews, MOBILENET_V2_NETWORK, type EmbedNetwork } from '../src/models/embed/features.ts';
import { MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, toMobileNetV2Input } from '../src/models/embed/mobilenet-v2.ts';
import { l2Normalize } from '../src/models/embed/vector.ts';
import { float32s, type WhiteningFile } from '../src/models/embed/whitening.ts';
import { convertTfjsGraph } from '../scripts/onnx-converter/convert.ts';
import type { Priority } from '@edge-image-search/contract/wire';
import { withPriority } from '../src/priority.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, InferenceSession, ModelSource, Runtime } from '../src/runtime/runtime.ts';
import { createTfjsWasmRuntime } from '../src/runtime/tfjs-wasm.ts';
import { cosine, IMAGES_DIR, launchServer, runUntilExit, startServer, waitUntilReady } from './harness.ts';
import { SCHED_IDLE, threadStats } from './proc-threads.ts';

/** Photos and cut-outs, with and without objects the detector finds. */
const IMAGES = [
  'opencv-doc_plant.jpg',
  'opencv-doc_building.jpg',
  'skimage_astronaut.jpg',
  'skimage_chelsea.jpg',
  'opencv-doc_board.jpg',
  'animals_mammals_cats_tiger.png',
];

type Sessions = { embed: InferenceSession; backbone: InferenceSession; detect: InferenceSession };
const sessions = {} as { onnx: Sessions; tfjs: Sessions };
const pixels = new Map<string, RgbPixels>();

before(async () => {
  const load = async (runtime: Runtime): Promise<Sessions> => ({
    embed: await runtime.load(MOBILENET_V2_SOURCE),
    backbone: await runtime.load(CENTERNET_BACKBONE_NETWORK.source),
    detect: await runtime.load(CENTERNET_SOURCE),
  });
  sessions.onnx = await load(await createOnnxRuntime());
  sessions.tfjs = await load(await createTfjsWasmRuntime());
  for (const file of IMAGES) pixels.set(file, (await decodeImage(await readFile(path.join(IMAGES_DIR, file)))).pixels);
});

/** A network an embedding reads, and its session. */
type Network = { name: string; network: EmbedNetwork; session: (s: Sessions) => InferenceSession };
const MOBILENET_V2: Network = { name: 'MobileNetV2', network: MOBILENET_V2_NETWORK, session: (s) => s.embed };
const CENTERNET_BACKBONE: Network = { name: 'CenterNet\'s backbone', network: CENTERNET_BACKBONE_NETWORK, session: (s) => s.backbone };

/** A part of an embedding: a network's unit vector, transformed, then joined at 1/sqrt(parts) of the length. */
type Part = Network & { dim: number; transform: (unit: Float32Array) => ArrayLike<number> };

/** Each embedder with its parts, in the order they are joined, as the README describes them. */
const EMBEDDINGS: { spec: EmbedderSpec; parts: Part[] }[] = [
  { spec: MOBILENET_V2_EMBEDDER, parts: [{ ...MOBILENET_V2, dim: 448, transform: (unit) => unit }] },
  {
    spec: FUSED_EMBEDDER,
    parts: [
      { ...MOBILENET_V2, dim: 256, transform: whitenedByTheFile },
      { ...CENTERNET_BACKBONE, dim: 120, transform: (unit) => unit },
    ],
  },
];

const embedderOn = (s: Sessions, { spec, parts }: (typeof EMBEDDINGS)[number]) => new SpecEmbedder(spec, parts.map(({ session }) => session(s)));

describe('ONNX and tfjs-wasm agree', () => {
  for (const embedding of EMBEDDINGS) {
    const { spec, parts } = embedding;
    test(`on the ${spec.dim}-d embedder's vectors, each network's part too (cosine >= 0.9999)`, async () => {
      const [onnx, tfjs] = [embedderOn(sessions.onnx, embedding), embedderOn(sessions.tfjs, embedding)];
      for (const [file, image] of pixels) {
        const [a, b] = [await onnx.embed(image), await tfjs.embed(image)];
        const similarity = cosine(Array.from(a), Array.from(b));
        assert.ok(similarity >= 0.9999, `${file}: cosine ${similarity}`);
        for (const [index, [start, end]] of partRanges(parts).entries()) {
          const partSimilarity = cosine(Array.from(a.subarray(start, end)), Array.from(b.subarray(start, end)));
          assert.ok(partSimilarity >= 0.9999, `${file}, part ${index}: cosine ${partSimilarity}`);
        }
      }
    });
  }

  test('on CenterNet\'s detections: same labels, boxes within 1 px, scores within 1e-3', async () => {
    const onnx = new CenterNetDetector(sessions.onnx.detect);
    const tfjs = new CenterNetDetector(sessions.tfjs.detect);
    let compared = 0;
    for (const [file, image] of pixels) {
      // A low floor, so that every image has detections to compare.
      const [expected, actual] = [await tfjs.detect(image, 0.1), await onnx.detect(image, 0.1)];
      assert.equal(actual.length, expected.length, `${file}: ${actual.length} detections, tfjs ${expected.length}`);
      for (const detection of expected) {
        const match = actual.find((candidate) => candidate.label === detection.label && close(candidate, detection));
        assert.ok(match, `${file}: no ONNX detection matches ${JSON.stringify(detection)}`);
      }
      compared += expected.length;
    }
    assert.ok(compared >= 20, `only ${compared} detections compared`);
  });
});

/** CPU time (clock ticks) of each of this process's threads at `niceness`, by thread id (Linux keeps niceness per thread). */
function cpuTicksByThreadAtNiceness(niceness: number): Map<string, number> {
  return new Map([...threadStats('self')].filter(([, stat]) => stat.niceness === niceness).map(([task, { ticks }]) => [task, ticks]));
}

/** CPU time (clock ticks) of this process's threads at `niceness`. */
function cpuTicksAtNiceness(niceness: number): number {
  return [...cpuTicksByThreadAtNiceness(niceness).values()].reduce((sum, ticks) => sum + ticks, 0);
}

/** [start, end) of each network's part in an embedding's vector. */
function partRanges(parts: readonly Part[]): [number, number][] {
  let start = 0;
  return parts.map(({ dim }) => [start, (start += dim)]);
}

function close(a: Detection, b: Detection): boolean {
  return Math.abs(a.score - b.score) <= 1e-3 && a.box.every((edge, i) => Math.abs(edge - b.box[i]!) <= 1);
}

const WHITENING_FILE = JSON.parse(
  readFileSync(new URL('../src/models/embed/whitening-mobilenet-v2-pca256-pow0.25-tuxpaint570-v1.json', import.meta.url), 'utf8'),
) as WhiteningFile;

/** The shipped whitening, applied here from the file's own numbers: less the mean, on the components, over eigenvalue^power. */
function whitenedByTheFile(unit: Float32Array): Float32Array {
  const file = WHITENING_FILE;
  const [mean, components] = [float32s(file.mean, file.dims), float32s(file.components, file.kept * file.dims)];
  const projected = Float64Array.from({ length: file.kept }, (_, k) => {
    let sum = 0;
    for (let i = 0; i < file.dims; i++) sum += (unit[i]! - mean[i]!) * components[k * file.dims + i]!;
    return sum / file.eigenvalues[k]! ** file.power;
  });
  return l2Normalize(projected);
}

function squaredNorm(vector: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! ** 2;
  return sum;
}

describe('each embedding', () => {
  test('has the documented ids and lengths', () => {
    assert.equal(MOBILENET_V2_EMBEDDER.modelId, 'mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg448-whole+centre70-mirrored-v2');
    assert.equal(
      FUSED_EMBEDDER.modelId,
      'mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg448-pca256-pow0.25-tuxpaint570-v1' +
        '+centernet_mobilenetv3-human3.3.6-expanded_conv_14_avg120_224-whole+centre70-mirrored-fused376-v3',
    );
    assert.deepEqual(FUSED_PART_DIMS, [256, 120]);
    for (const { spec, parts } of EMBEDDINGS) assert.equal(spec.dim, parts.reduce((sum, { dim }) => sum + dim, 0));
  });

  for (const embedding of EMBEDDINGS) {
    const { spec, parts } = embedding;
    test(`${spec.dim}-d: joins each network's own unit vector (its node summed over positions and views${parts.length > 1 ? ', whitened for MobileNetV2' : ''})`, async () => {
      const embedder = embedderOn(sessions.onnx, embedding);
      const share = 1 / parts.length;
      for (const file of IMAGES.slice(0, 3)) {
        const image = pixels.get(file)!;
        const views = await embedViews(image);
        assert.equal(views.length, 4);
        // The second view is the first mirrored: compare the first row's pixels end to end.
        const [whole, mirrored] = [views[0]!, views[1]!];
        for (let x = 0; x < whole.width; x++) {
          const [from, to] = [x * 3, (whole.width - 1 - x) * 3];
          assert.deepEqual([...mirrored.data.subarray(to, to + 3)], [...whole.data.subarray(from, from + 3)]);
        }
        const vector = await embedder.embed(image);
        assert.equal(vector.length, spec.dim);
        assert.ok(Math.abs(squaredNorm(vector) - 1) < 1e-5, `${file}: not unit length`);
        for (const [index, { name, network, session, transform }] of parts.entries()) {
          let sum: Float64Array | undefined;
          for (const view of views) {
            const map = (await session(sessions.onnx).run(network.toInput(view), [network.node])).get(network.node)!;
            const channels = map.shape[3]!;
            assert.deepEqual(map.shape, [1, 7, 7, channels]);
            sum ??= new Float64Array(channels);
            map.data.forEach((value, i) => (sum![i % channels]! += value));
          }
          const expected = transform(l2Normalize(sum!));
          const [start, end] = partRanges(parts)[index]!;
          const part = vector.subarray(start, end);
          assert.equal(part.length, expected.length);
          assert.ok(Math.abs(squaredNorm(part) - share) < 1e-5, `${file}, ${name}: squared norm ${squaredNorm(part)}, not ${share}`);
          const worst = part.reduce((max, value, i) => Math.max(max, Math.abs(value - expected[i]! * Math.sqrt(share))), 0);
          assert.ok(worst < 1e-5, `${file}, ${name}: differs from its own unit vector by up to ${worst}`);
        }
      }
    });
  }
});

describe('the whitening file', () => {
  test('holds unit, orthogonal components, largest eigenvalue first, learned on none of the images the eval scores', async () => {
    const { dims, kept, eigenvalues, corpus } = WHITENING_FILE;
    const components = float32s(WHITENING_FILE.components, kept * dims);
    const dot = (a: number, b: number) => {
      let sum = 0;
      for (let i = 0; i < dims; i++) sum += components[a * dims + i]! * components[b * dims + i]!;
      return sum;
    };
    for (let a = 0; a < kept; a++) {
      assert.ok(Math.abs(dot(a, a) - 1) < 1e-5, `component ${a} is not unit`);
      for (const b of [a + 1, kept - 1]) if (b > a && b < kept) assert.ok(Math.abs(dot(a, b)) < 1e-5, `components ${a} and ${b} are not orthogonal`);
      if (a > 0) assert.ok(eigenvalues[a]! <= eigenvalues[a - 1]! && eigenvalues[a]! > 0);
    }
    const manifest = JSON.parse(await readFile(path.join(IMAGES_DIR, 'manifest.json'), 'utf8')) as { source_package: string; source_path: string }[];
    const scored = manifest.filter((entry) => entry.source_package === corpus.package).map((entry) => entry.source_path);
    assert.ok(scored.length > 0);
    assert.deepEqual(scored.filter((file) => corpus.files.includes(file)), []);
    assert.equal(corpus.files.length, 570);
  });
});

describe('ONNX batches', () => {
  for (const { name, network, session: sessionOf } of [MOBILENET_V2, CENTERNET_BACKBONE]) {
    test(`${name}: a batch of 3 gives the rows of three single runs`, async () => {
      const session = sessionOf(sessions.onnx);
      const views = await Promise.all(IMAGES.slice(0, 3).map(async (file) => (await embedViews(pixels.get(file)!))[0]!));
      const inputs = views.map(network.toInput);
      const rowLength = inputs[0]!.data.length;
      const batch: Float32Tensor = { data: new Float32Array(rowLength * 3), shape: [3, ...inputs[0]!.shape.slice(1)] };
      inputs.forEach((input, row) => batch.data.set(input.data, row * rowLength));
      const batched = (await session.run(batch, [network.node])).get(network.node)!;
      const channels = batched.shape[3]!;
      assert.deepEqual(batched.shape, [3, 7, 7, channels]);
      const size = batched.data.length / 3;
      for (const [row, input] of inputs.entries()) {
        const single = (await session.run(input, [network.node])).get(network.node)!;
        assert.deepEqual(single.shape, [1, 7, 7, channels]);
        const rowData = batched.data.subarray(row * size, (row + 1) * size);
        const worst = single.data.reduce((max, value, i) => Math.max(max, Math.abs(value - rowData[i]!)), 0);
        assert.ok(worst < 1e-4, `row ${row}: differs by up to ${worst}`);
      }
    });
  }
});

describe('the converter', () => {
  /** A hand-made TF.js graph: x -> Relu6 -> "clipped", and x -> Erf -> "erf". */
  const artifacts: io.ModelArtifacts = {
    modelTopology: {
      node: [
        {
          name: 'x',
          op: 'Placeholder',
          attr: { dtype: { type: 'DT_FLOAT' }, shape: { shape: { dim: [{ size: '-1' }, { size: '3' }] } } },
        },
        { name: 'clipped', op: 'Relu6', input: ['x'], attr: { T: { type: 'DT_FLOAT' } } },
        { name: 'erf', op: 'Erf', input: ['x'], attr: { T: { type: 'DT_FLOAT' } } },
      ],
    },
    weightSpecs: [],
    weightData: new ArrayBuffer(0),
  };

  test('names an unsupported op and its node', () => {
    assert.throws(
      () => convertTfjsGraph(artifacts, { name: 'tiny', outputs: ['erf'] }),
      /^Error: cannot convert tiny to ONNX: unsupported TF op Erf \(node "erf"\)$/,
    );
  });

  test('leaves out what the outputs do not need, and keeps the batch dimension free', async () => {
    const session = await ort.InferenceSession.create(convertTfjsGraph(artifacts, { name: 'tiny', outputs: ['clipped'] }));
    assert.deepEqual(session.outputNames, ['clipped']);
    const x = new ort.Tensor('float32', Float32Array.of(-1, 2, 7, 0.5, 6, 9), [2, 3]);
    const { clipped } = await session.run({ x });
    assert.deepEqual(clipped!.dims, [2, 3]);
    assert.deepEqual([...(clipped!.data as Float32Array)], [0, 2, 6, 0.5, 6, 6]);
  });

  test('refuses an output that is not a node of the graph', () => {
    assert.throws(() => convertTfjsGraph(artifacts, { name: 'tiny', outputs: ['nowhere'] }), /no node named "nowhere"/);
  });
});

describe('the ONNX runtime', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'onnx-models-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  test('says which command converts a missing model', async () => {
    const runtime = await createOnnxRuntime({ modelDirectory: directory });
    await assert.rejects(
      runtime.load(MOBILENET_V2_SOURCE),
      /no ONNX model for mobilenet_v2_mid at .*: run "npm run convert-models -w inference"/,
    );
  });

  test('refuses a file converted for other outputs than the model declares', async () => {
    const runtime = await createOnnxRuntime();
    const source: ModelSource = { ...MOBILENET_V2_SOURCE, outputs: [MOBILENET_V2_NODES.lastBottleneck] };
    await assert.rejects(runtime.load(source), /was converted for other inputs or outputs than mobilenet_v2_mid declares/);
  });

  test('runs off the main thread: the event loop turns while a run is under way', async () => {
    const { input } = await toCenterNetInput(pixels.get(IMAGES[0]!)!);
    const turns: string[] = [];
    const run = sessions.onnx.detect.run(input, [CENTERNET_SOURCE.outputs[0]!]).then(() => turns.push('run done'));
    // On the calling thread (onnxruntime-node's own run()), the run would finish before this callback.
    setImmediate(() => turns.push('event loop turned'));
    await run;
    assert.deepEqual(turns, ['event loop turned', 'run done']);
  });

  test('runs bulk work on threads in the OS background (SCHED_IDLE, niceness 19), interactive work on others', async () => {
    const { input } = await toCenterNetInput(pixels.get(IMAGES[0]!)!);
    const runFiveAs = async (priority: Priority) => {
      for (let i = 0; i < 5; i++) await withPriority(priority, () => sessions.onnx.detect.run(input, [CENTERNET_SOURCE.outputs[0]!]));
    };
    const before = cpuTicksAtNiceness(19);
    await runFiveAs('interactive');
    const afterInteractive = cpuTicksAtNiceness(19);
    await runFiveAs('bulk');
    const afterBulk = cpuTicksAtNiceness(19);
    assert.ok(afterInteractive - before <= 2, `interactive runs took ${afterInteractive - before} ticks on the bulk threads`);
    assert.ok(afterBulk - afterInteractive >= 5, `bulk runs took only ${afterBulk - afterInteractive} ticks on the bulk threads`);
    const policies = [...threadStats('self').values()].filter((stat) => stat.niceness === 19).map((stat) => stat.policy);
    assert.ok(policies.length > 0 && policies.every((policy) => policy === SCHED_IDLE), `policies of the bulk threads: ${policies.join(', ')}`);
  });

  test('runs bulk runs side by side, one a lane, each lane answering as the interactive thread does', async () => {
    const runtime = await createOnnxRuntime({ intraOpThreads: 2, bulkLanes: 2 });
    assert.match(runtime.description, /bulk: 2 lanes of 1 thread, SCHED_IDLE/);
    const session = await runtime.load(CENTERNET_SOURCE);
    const { input } = await toCenterNetInput(pixels.get(IMAGES[2]!)!);
    const output = CENTERNET_SOURCE.outputs[0]!;
    const expected = (await session.run(input, [output])).get(output)!.data;
    const before = cpuTicksByThreadAtNiceness(19);
    // Started together, the two runs go to the two lanes, whose threads each run one.
    const answers = await withPriority('bulk', () => Promise.all([0, 1].map(() => session.run(input, [output]))));
    for (const answer of answers) {
      const worst = answer.get(output)!.data.reduce((max, value, i) => Math.max(max, Math.abs(value - expected[i]!)), 0);
      assert.ok(worst < 1e-4, `a bulk lane differs from the interactive thread by up to ${worst}`);
    }
    const after = cpuTicksByThreadAtNiceness(19);
    const busyThreads = [...after].filter(([task, ticks]) => ticks - (before.get(task) ?? 0) >= 2);
    assert.ok(busyThreads.length >= 2, `the two bulk runs kept ${busyThreads.length} thread busy`);
  });

  test('refuses, like tfjs-wasm, an output the model did not declare', async () => {
    const input = await toMobileNetV2Input(pixels.get(IMAGES[0]!)!, 'fill');
    for (const session of [sessions.onnx.embed, sessions.tfjs.embed]) {
      await assert.rejects(session.run(input, ['Identity']), /model mobilenet_v2_mid: "Identity" not among its declared outputs/);
    }
  });
});

describe('INFERENCE_RUNTIME', () => {
  test('onnx and tfjs-wasm serve the same embeddings, of each embedder', async () => {
    const bytes = await readFile(path.join(IMAGES_DIR, 'skimage_coffee.jpg'));
    const [onnx, tfjs] = await Promise.all([startServer({ INFERENCE_RUNTIME: 'onnx' }), startServer({ INFERENCE_RUNTIME: 'tfjs-wasm' })]);
    try {
      for (const { modelId, dim } of [MOBILENET_V2_EMBEDDER, FUSED_EMBEDDER]) {
        const [a, b] = await Promise.all([onnx.predict(bytes, 'embed', { embed_model: modelId }), tfjs.predict(bytes, 'embed', { embed_model: modelId })]);
        assert.equal(a.status, 200);
        assert.equal(b.status, 200);
        assert.deepEqual([a.body.embed.model, a.body.embed.dim, b.body.embed.model, b.body.embed.dim], [modelId, dim, modelId, dim]);
        assert.ok(cosine(a.body.embed.vector, b.body.embed.vector) >= 0.9999, modelId);
      }
    } finally {
      onnx.stop();
      tfjs.stop();
    }
  });

  test('the start-up line names the runtime', async () => {
    const server = await launchServer({ INFERENCE_RUNTIME: 'tfjs-wasm' });
    try {
      const line = new Promise<string>((resolve) => {
        server.child.stdout!.on('data', (chunk: string) => {
          const match = /inference: runtime .*/.exec(chunk);
          if (match) resolve(match[0]);
        });
      });
      await waitUntilReady(server);
      assert.match(await line, /^inference: runtime tfjs-wasm, tfjs \S+ wasm/);
    } finally {
      server.stop();
    }
  });

  test('a bulk lane count below 1 stops the service, naming the setting', async () => {
    const { code, output } = await runUntilExit({ ONNX_BULK_LANES: '0' });
    assert.equal(code, 1);
    assert.match(output, /ONNX_BULK_LANES must be an integer of at least 1, got "0"/);
  });

  test('an unknown runtime stops the service before it listens, naming the choices', async () => {
    const { code, output } = await runUntilExit({ INFERENCE_RUNTIME: 'tensorrt' });
    assert.equal(code, 1);
    assert.doesNotMatch(output, /listening on/);
    assert.match(output, /INFERENCE_RUNTIME must be one of onnx, tfjs-wasm, got "tensorrt"/);
  });
});
