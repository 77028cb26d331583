/**
 * The ONNX path: the converted models against tfjs-wasm on real images (the
 * embedder's vectors, CenterNet's detections), batches, the converter on
 * hand-made graphs (an unsupported op, pruning, a free batch dimension), the
 * runtime's refusals, and runtime selection in the real service.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { io } from '@tensorflow/tfjs';
import ort from 'onnxruntime-node';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import { CENTERNET_SOURCE, CenterNetDetector, toCenterNetInput } from '../src/models/detect/centernet.ts';
import type { Detection } from '../src/models/detect/detector.ts';
import { Embedder } from '../src/models/embed/embedder.ts';
import { MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, toMobileNetV2Input } from '../src/models/embed/mobilenet-v2.ts';
import { convertTfjsGraph } from '../scripts/onnx-converter/convert.ts';
import type { Priority } from '../src/contract.ts';
import { withPriority } from '../src/priority.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, InferenceSession, ModelSource, Runtime } from '../src/runtime/runtime.ts';
import { createTfjsWasmRuntime } from '../src/runtime/tfjs-wasm.ts';
import { cosine, IMAGES_DIR, launchServer, runUntilExit, startServer, waitUntilHealthy } from './harness.ts';

/** Photos and cut-outs, with and without objects the detector finds. */
const IMAGES = [
  'opencv-doc_plant.jpg',
  'opencv-doc_building.jpg',
  'skimage_astronaut.jpg',
  'skimage_chelsea.jpg',
  'opencv-doc_board.jpg',
  'animals_mammals_cats_tiger.png',
];

type Sessions = { embed: InferenceSession; detect: InferenceSession };
const sessions = {} as { onnx: Sessions; tfjs: Sessions };
const pixels = new Map<string, RgbPixels>();

before(async () => {
  const load = async (runtime: Runtime): Promise<Sessions> => ({
    embed: await runtime.load(MOBILENET_V2_SOURCE),
    detect: await runtime.load(CENTERNET_SOURCE),
  });
  sessions.onnx = await load(await createOnnxRuntime());
  sessions.tfjs = await load(await createTfjsWasmRuntime());
  for (const file of IMAGES) pixels.set(file, (await decodeImage(await readFile(path.join(IMAGES_DIR, file)))).pixels);
});

describe('ONNX and tfjs-wasm agree', () => {
  test('on the embedder\'s vectors (cosine >= 0.9999)', async () => {
    const onnx = new Embedder(sessions.onnx.embed);
    const tfjs = new Embedder(sessions.tfjs.embed);
    for (const [file, image] of pixels) {
      const similarity = cosine(Array.from(await onnx.embed(image)), Array.from(await tfjs.embed(image)));
      assert.ok(similarity >= 0.9999, `${file}: cosine ${similarity}`);
    }
  });

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

/** CPU time (clock ticks) of this process's threads at `niceness`, from /proc (Linux keeps niceness per thread). */
function cpuTicksAtNiceness(niceness: number): number {
  let ticks = 0;
  for (const task of readdirSync('/proc/self/task')) {
    // The fields after the parenthesised name: utime and stime are the 12th and 13th, nice the 17th.
    const fields = readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ');
    if (Number(fields[16]) === niceness) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}

function close(a: Detection, b: Detection): boolean {
  return Math.abs(a.score - b.score) <= 1e-3 && a.box.every((edge, i) => Math.abs(edge - b.box[i]!) <= 1);
}

describe('ONNX batches', () => {
  test('a batch of 3 gives the rows of three single runs', async () => {
    const output = MOBILENET_V2_NODES.lastBottleneck;
    const inputs = await Promise.all(IMAGES.slice(0, 3).map((file) => toMobileNetV2Input(pixels.get(file)!, 'fill')));
    const rowLength = inputs[0]!.data.length;
    const batch: Float32Tensor = { data: new Float32Array(rowLength * 3), shape: [3, ...inputs[0]!.shape.slice(1)] };
    inputs.forEach((input, row) => batch.data.set(input.data, row * rowLength));
    const batched = (await sessions.onnx.embed.run(batch, [output])).get(output)!;
    assert.deepEqual(batched.shape, [3, 7, 7, 448]);
    const size = batched.data.length / 3;
    for (const [row, input] of inputs.entries()) {
      const single = (await sessions.onnx.embed.run(input, [output])).get(output)!;
      assert.deepEqual(single.shape, [1, 7, 7, 448]);
      const rowData = batched.data.subarray(row * size, (row + 1) * size);
      const worst = single.data.reduce((max, value, i) => Math.max(max, Math.abs(value - rowData[i]!)), 0);
      assert.ok(worst < 1e-4, `row ${row}: differs by up to ${worst}`);
    }
  });
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

  test('runs bulk work on threads at the lowest OS priority, interactive work on others', async () => {
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
  });

  test('refuses, like tfjs-wasm, an output the model did not declare', async () => {
    const input = await toMobileNetV2Input(pixels.get(IMAGES[0]!)!, 'fill');
    for (const session of [sessions.onnx.embed, sessions.tfjs.embed]) {
      await assert.rejects(session.run(input, ['Identity']), /model mobilenet_v2_mid: "Identity" not among its declared outputs/);
    }
  });
});

describe('INFERENCE_RUNTIME', () => {
  test('onnx and tfjs-wasm serve the same embeddings', async () => {
    const bytes = await readFile(path.join(IMAGES_DIR, 'skimage_coffee.jpg'));
    const [onnx, tfjs] = await Promise.all([startServer({ INFERENCE_RUNTIME: 'onnx' }), startServer({ INFERENCE_RUNTIME: 'tfjs-wasm' })]);
    try {
      const [a, b] = await Promise.all([onnx.predict(bytes), tfjs.predict(bytes)]);
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.ok(cosine(a.body.embed.vector, b.body.embed.vector) >= 0.9999);
    } finally {
      onnx.stop();
      tfjs.stop();
    }
  });

  test('the start-up line names the runtime', async () => {
    const { child, baseUrl } = await launchServer({ INFERENCE_RUNTIME: 'tfjs-wasm' });
    try {
      const line = new Promise<string>((resolve) => {
        child.stdout!.on('data', (chunk: string) => {
          const match = /inference: runtime .*/.exec(chunk);
          if (match) resolve(match[0]);
        });
      });
      await waitUntilHealthy(baseUrl);
      assert.match(await line, /^inference: runtime tfjs-wasm, tfjs \S+ wasm/);
    } finally {
      child.kill();
    }
  });

  test('an unknown runtime stops the service before it listens, naming the choices', async () => {
    const { code, output } = await runUntilExit({ INFERENCE_RUNTIME: 'tensorrt' });
    assert.equal(code, 1);
    assert.doesNotMatch(output, /listening on/);
    assert.match(output, /INFERENCE_RUNTIME must be one of onnx, tfjs-wasm, got "tensorrt"/);
  });
});
