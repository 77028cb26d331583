/**
 * Poses: the converter's ops that MoveNet needs (hand-made graphs, ONNX
 * against tfjs-wasm), MoveNet's keypoints on both runtimes on real photos of
 * people, and the garment boxes drawn from keypoints.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import ort from 'onnxruntime-node';
import { convertTfjsGraph } from '../scripts/onnx-converter/convert.ts';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import type { Box } from '../src/image/view.ts';
import { garmentBoxes, MIN_GARMENT_SIDE, MIN_KEYPOINT_SCORE, type Garment } from '../src/models/pose/garments.ts';
import {
  KEYPOINT_NAMES,
  MOVENET_INPUT_SIZE,
  MOVENET_SOURCE,
  MoveNetPoseEstimator,
  toMoveNetInput,
  type Keypoint,
  type KeypointName,
} from '../src/models/pose/movenet.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { InferenceSession } from '../src/runtime/runtime.ts';
import { createTfjsWasmRuntime } from '../src/runtime/tfjs-wasm.ts';
import { IMAGES_DIR } from './harness.ts';

/** People in the test photos, each with its box as CenterNet finds it (rounded, clamped to the image). */
const PEOPLE = {
  /** Head to waist, facing the camera. */
  astronaut: { file: 'skimage_astronaut.jpg', box: [10, 7, 369, 512] },
  /** Whole body, kicking, mostly facing the camera. */
  messi: { file: 'opencv-doc_messi5.jpg', box: [81, 66, 454, 328] },
  /** Whole body, standing, facing the camera (the player on the left). */
  player: { file: 'opencv-doc_basketball1.jpg', box: [34, 81, 168, 473] },
} as const satisfies Record<string, { file: string; box: Box }>;
type Person = keyof typeof PEOPLE;

const sessions = {} as { onnx: InferenceSession; tfjs: InferenceSession };
const pixels = new Map<Person, RgbPixels>();
/** Keypoints per person from each runtime. */
const poses = { onnx: new Map<Person, Keypoint[]>(), tfjs: new Map<Person, Keypoint[]>() };

before(async () => {
  // One intra-op thread: tfjs-wasm has one too, and the tests leave the other core alone.
  sessions.onnx = await (await createOnnxRuntime({ intraOpThreads: 1 })).load(MOVENET_SOURCE);
  sessions.tfjs = await (await createTfjsWasmRuntime()).load(MOVENET_SOURCE);
  for (const [person, { file, box }] of Object.entries(PEOPLE) as [Person, (typeof PEOPLE)[Person]][]) {
    const image = (await decodeImage(await readFile(path.join(IMAGES_DIR, file)))).pixels;
    pixels.set(person, image);
    for (const runtime of ['onnx', 'tfjs'] as const) {
      poses[runtime].set(person, await new MoveNetPoseEstimator(sessions[runtime]).estimate(image, box));
    }
  }
});

describe('the converter, on the ops MoveNet brought in', () => {
  /** Weights for a hand-made graph: each constant's spec, its bytes appended in order. */
  function constants(values: Record<string, { dtype: 'float32' | 'int32'; shape: number[]; data: number[] }>) {
    const weightSpecs = Object.entries(values).map(([name, { dtype, shape }]) => ({ name, dtype, shape }));
    const arrays = Object.values(values).map(({ dtype, data }) => (dtype === 'float32' ? Float32Array.from(data) : Int32Array.from(data)));
    const bytes = Buffer.concat(arrays.map((array) => Buffer.from(array.buffer)));
    const nodes = Object.entries(values).map(([name, { dtype }]) => ({
      name,
      op: 'Const',
      attr: { dtype: { type: dtype === 'float32' ? 'DT_FLOAT' : 'DT_INT32' } },
    }));
    return { nodes, weightSpecs, weightData: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) };
  }

  const float = { T: { type: 'DT_FLOAT' } };
  const ones = ['1', '1', '1', '1'];
  const int32 = { T: { type: 'DT_INT32' } };
  const weights = constants({
    filter: { dtype: 'float32', shape: [1, 1, 2, 2], data: [1, 2, 3, -1] },
    y: { dtype: 'float32', shape: [2], data: [0.5, -2] },
    indices: { dtype: 'int32', shape: [2, 3], data: [0, 1, 2, 0, 0, 1] },
    last: { dtype: 'int32', shape: [], data: [-1] },
    one: { dtype: 'int32', shape: [], data: [1] },
    counts: { dtype: 'int32', shape: [1, 3, 2], data: [0, 1, 2, 3, 4, 5] },
  });
  /**
   * x [1, 2, 3, 2] and its 1x1 convolution `conv` (NCHW inside the converted graph), through every new op, on
   * both layouts; x's first column repeats (ties for ArgMax over the rows), and (4, 1) makes conv's two channels equal.
   */
  const artifacts: tf.io.ModelArtifacts = {
    modelTopology: {
      // tfjs reads the GraphDef's versions.
      versions: { producer: 1 },
      node: [
        { name: 'x', op: 'Placeholder', attr: { dtype: { type: 'DT_FLOAT' }, shape: { shape: { dim: [1, 2, 3, 2].map((size) => ({ size: `${size}` })) } } } },
        ...weights.nodes,
        {
          name: 'conv',
          op: 'Conv2D',
          input: ['x', 'filter'],
          attr: { ...float, padding: { s: btoa('VALID') }, strides: { list: { i: ones } }, dilations: { list: { i: ones } } },
        },
        { name: 'argmax_channels', op: 'ArgMax', input: ['conv', 'last'], attr: { ...float, output_type: { type: 'DT_INT32' } } },
        { name: 'argmax_rows', op: 'ArgMax', input: ['x', 'one'], attr: { ...float, output_type: { type: 'DT_INT32' } } },
        { name: 'unpack_channels', op: 'Unpack', input: ['conv'], attr: { ...float, axis: { i: '3' }, num: { i: '2' } } },
        { name: 'unpack_rows', op: 'Unpack', input: ['x'], attr: { ...float, axis: { i: '-3' }, num: { i: '2' } } },
        { name: 'pack', op: 'Pack', input: ['unpack_channels:1', 'unpack_channels'], attr: { ...float, axis: { i: '-1' }, N: { i: '2' } } },
        { name: 'pack_ints', op: 'Pack', input: ['argmax_rows', 'counts'], attr: { ...int32, axis: { i: '0' }, N: { i: '2' } } },
        { name: 'squared', op: 'SquaredDifference', input: ['conv', 'y'], attr: float },
        { name: 'sqrt', op: 'Sqrt', input: ['squared'], attr: float },
        { name: 'divided', op: 'RealDiv', input: ['conv', 'y'], attr: float },
        { name: 'gathered', op: 'GatherNd', input: ['conv', 'indices'], attr: { Tparams: { type: 'DT_FLOAT' }, Tindices: { type: 'DT_INT32' } } },
        { name: 'picked_indices', op: 'ExpandDims', input: ['argmax_channels', 'last'], attr: { ...int32, Tdim: { type: 'DT_INT32' } } },
        { name: 'picked', op: 'GatherNd', input: ['y', 'picked_indices'], attr: { Tparams: { type: 'DT_FLOAT' }, Tindices: { type: 'DT_INT32' } } },
      ],
    },
    weightSpecs: weights.weightSpecs,
    weightData: weights.weightData,
  };
  const outputs = [
    'argmax_channels',
    'argmax_rows',
    'unpack_channels',
    'unpack_channels:1',
    'unpack_rows:1',
    'pack',
    'pack_ints',
    'squared',
    'sqrt',
    'divided',
    'gathered',
    'picked',
  ];
  const x = [4, 1, 0, 2, 3, 3, 4, 1, 1, 0, -2, 5];

  test('ArgMax, Pack, Unpack, GatherNd, SquaredDifference, Sqrt and RealDiv give what tfjs gives', async () => {
    const session = await ort.InferenceSession.create(convertTfjsGraph(artifacts, { name: 'ops', outputs }));
    const onnx = await session.run({ x: new ort.Tensor('float32', Float32Array.from(x), [1, 2, 3, 2]) });
    const model = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
    const expected = model.execute(tf.tensor(x, [1, 2, 3, 2]), outputs) as tf.Tensor[];
    try {
      for (const [index, name] of outputs.entries()) {
        const want = expected[index]!;
        const got = onnx[name]!;
        assert.deepEqual(got.dims, want.shape, `${name}: shape`);
        assert.equal(got.type, want.dtype, `${name}: type`);
        const wanted = Array.from(await want.data());
        Array.from(got.data as Float32Array | Int32Array).forEach((value, i) => {
          assert.ok(Math.abs(value - wanted[i]!) <= 1e-6 * Math.max(1, Math.abs(wanted[i]!)), `${name}[${i}]: ${value}, tfjs ${wanted[i]}`);
        });
      }
    } finally {
      tf.dispose(expected);
      model.dispose();
    }
  });

  test('ArgMax takes the first of equal values, as TF does', async () => {
    const session = await ort.InferenceSession.create(convertTfjsGraph(artifacts, { name: 'ops', outputs: ['argmax_rows', 'argmax_channels'] }));
    const result = await session.run({ x: new ort.Tensor('float32', Float32Array.from(x), [1, 2, 3, 2]) });
    // Rows tie in column 0 ((4, 1) twice); conv's channels tie at (4, 1): 4 + 3 * 1 = 2 * 4 - 1.
    assert.deepEqual([...(result.argmax_rows!.data as Int32Array)], [0, 0, 1, 0, 0, 1]);
    assert.equal((result.argmax_channels!.data as Int32Array)[0], 0);
  });

  test('an int32 input takes float32, cast inside the graph', async () => {
    const cast: tf.io.ModelArtifacts = {
      modelTopology: {
        node: [
          { name: 'pixels', op: 'Placeholder', attr: { dtype: { type: 'DT_INT32' }, shape: { shape: { dim: [{ size: '3' }] } } } },
          { name: 'doubled', op: 'AddV2', input: ['pixels', 'pixels'], attr: int32 },
        ],
      },
      weightSpecs: [],
      weightData: new ArrayBuffer(0),
    };
    const session = await ort.InferenceSession.create(convertTfjsGraph(cast, { name: 'cast', outputs: ['doubled'] }));
    const { doubled } = await session.run({ pixels: new ort.Tensor('float32', Float32Array.of(0, 7, 255), [3]) });
    assert.equal(doubled!.type, 'int32');
    assert.deepEqual([...(doubled!.data as Int32Array)], [0, 14, 510]);
  });
});

describe('MoveNet', () => {
  test('ONNX and tfjs-wasm agree: keypoints within 0.05 px, scores within 1e-4', () => {
    for (const person of Object.keys(PEOPLE) as Person[]) {
      const [onnx, tfjs] = [poses.onnx.get(person)!, poses.tfjs.get(person)!];
      assert.deepEqual(
        onnx.map(({ name }) => name),
        [...KEYPOINT_NAMES],
      );
      for (const [i, expected] of tfjs.entries()) {
        const actual = onnx[i]!;
        const apart = Math.max(Math.abs(actual.x - expected.x), Math.abs(actual.y - expected.y));
        assert.ok(apart <= 0.05, `${person} ${expected.name}: ${apart} px apart`);
        assert.ok(Math.abs(actual.score - expected.score) <= 1e-4, `${person} ${expected.name}: scores ${actual.score}, ${expected.score}`);
      }
    }
  });

  /** The person's keypoints (ONNX) by name. */
  const pose = (person: Person) => new Map(poses.onnx.get(person)!.map((keypoint) => [keypoint.name, keypoint]));
  const confident = (keypoint: Keypoint) => keypoint.score >= MIN_KEYPOINT_SCORE;

  test('the standing player: a whole body, head to ankles, left and right the right way round', () => {
    const at = pose('player');
    for (const keypoint of at.values()) {
      const [x1, y1, x2, y2] = PEOPLE.player.box;
      assert.ok(keypoint.x >= x1 && keypoint.x <= x2 && keypoint.y >= y1 && keypoint.y <= y2, `${keypoint.name} outside the box`);
    }
    const column = ['nose', 'shoulder', 'hip', 'knee', 'ankle'];
    for (const side of ['left', 'right']) {
      const chain = column.map((joint) => at.get((joint === 'nose' ? joint : `${side}_${joint}`) as KeypointName)!);
      for (const keypoint of chain) assert.ok(confident(keypoint), `${keypoint.name}: score ${keypoint.score}`);
      for (let i = 1; i < chain.length; i++) assert.ok(chain[i - 1]!.y < chain[i]!.y, `${chain[i - 1]!.name} not above ${chain[i]!.name}`);
    }
    const lowest = Math.max(...[...at.values()].map((keypoint) => keypoint.y));
    assert.ok(lowest === at.get('left_ankle')!.y || lowest === at.get('right_ankle')!.y, 'an ankle is lowest');
    // Facing the camera: the person's left is on the picture's right.
    for (const joint of ['shoulder', 'hip', 'knee', 'ankle']) {
      assert.ok(at.get(`left_${joint}` as KeypointName)!.x > at.get(`right_${joint}` as KeypointName)!.x, `${joint}s swapped`);
    }
  });

  test('the kicking player: head above shoulders above hips above knees', () => {
    const at = pose('messi');
    const y = (name: KeypointName) => at.get(name)!.y;
    for (const name of ['nose', 'left_shoulder', 'right_shoulder', 'left_hip', 'right_hip', 'left_knee', 'right_knee'] as const) {
      assert.ok(confident(at.get(name)!), `${name}: score ${at.get(name)!.score}`);
    }
    assert.ok(y('nose') < Math.min(y('left_shoulder'), y('right_shoulder')));
    for (const side of ['left', 'right'] as const) {
      assert.ok(y(`${side}_shoulder`) < y(`${side}_hip`) && y(`${side}_hip`) < y(`${side}_knee`), `${side} side out of order`);
    }
    assert.ok(at.get('left_shoulder')!.x > at.get('right_shoulder')!.x, 'shoulders swapped');
  });

  test('the astronaut: face and shoulders found, the legs below the frame not', () => {
    const at = pose('astronaut');
    for (const name of ['nose', 'left_eye', 'right_eye', 'left_shoulder', 'right_shoulder'] as const) {
      assert.ok(confident(at.get(name)!), `${name}: score ${at.get(name)!.score}`);
    }
    // The face is at about x 180-270, y 70-150 in this 512x512 picture.
    const nose = at.get('nose')!;
    assert.ok(nose.x > 180 && nose.x < 270 && nose.y > 70 && nose.y < 150, `nose at ${nose.x}, ${nose.y}`);
    assert.ok(at.get('left_eye')!.y < nose.y && at.get('right_eye')!.y < nose.y, 'eyes below the nose');
    assert.ok(at.get('left_shoulder')!.y > nose.y + 50 && at.get('left_eye')!.x > at.get('right_eye')!.x);
    for (const name of ['left_knee', 'right_knee', 'left_ankle', 'right_ankle'] as const) {
      assert.ok(!confident(at.get(name)!), `${name}: score ${at.get(name)!.score}`);
    }
  });

  test('crops a square around the box, centred on it, black beyond the image', async () => {
    const image = pixels.get('astronaut')!;
    const box = PEOPLE.astronaut.box;
    const { input, toPixels } = await toMoveNetInput(image, box);
    const size = MOVENET_INPUT_SIZE;
    assert.deepEqual(input.shape, [1, size, size, 3]);
    // The box is 505 px high, the square 30 % more; where the image lands in it is rounded to whole input pixels.
    const inputPixel = (505 * 1.3) / size;
    const centre = toPixels(0.5, 0.5);
    assert.ok(Math.abs(centre.x - (box[0] + box[2]) / 2) <= inputPixel && Math.abs(centre.y - (box[1] + box[3]) / 2) <= inputPixel);
    // The square's left reaches about 139 px past the image's: 41 input pixels.
    const pixel = (x: number, y: number) => Array.from(input.data.subarray((y * size + x) * 3, (y * size + x) * 3 + 3));
    assert.deepEqual(pixel(0, size / 2), [0, 0, 0]);
    assert.deepEqual(pixel(39, size / 2), [0, 0, 0]);
    assert.notDeepEqual(pixel(size / 2, size / 2), [0, 0, 0]);
    assert.ok(toPixels(0, 0).x < 0 && toPixels(1, 1).x > image.width);
  });

  test('garments on the photos: the whole player dressed top to toe, the astronaut a top only', () => {
    const player = garmentBoxes(poses.onnx.get('player')!, PEOPLE.player.box, pixels.get('player')!.width, pixels.get('player')!.height);
    assert.deepEqual(
      player.map(({ label }) => label),
      ['Top', 'Bottom', 'Shoe', 'Shoe'],
    );
    const astronaut = garmentBoxes(poses.onnx.get('astronaut')!, PEOPLE.astronaut.box, 512, 512);
    assert.deepEqual(
      astronaut.map(({ label }) => label),
      ['Top'],
    );
  });
});

describe('garment boxes', () => {
  const IMAGE = { width: 400, height: 700 };
  const PERSON: Box = [100, 0, 300, 620];
  /** A person standing, facing the camera, arms hanging a little out, every keypoint at score 0.9. */
  const STANDING: Record<KeypointName, [number, number]> = {
    nose: [200, 50],
    left_eye: [210, 40],
    right_eye: [190, 40],
    left_ear: [220, 45],
    right_ear: [180, 45],
    left_shoulder: [240, 120],
    right_shoulder: [160, 120],
    left_elbow: [262, 200],
    right_elbow: [138, 200],
    left_wrist: [268, 280],
    right_wrist: [132, 280],
    left_hip: [230, 300],
    right_hip: [170, 300],
    left_knee: [230, 430],
    right_knee: [170, 430],
    left_ankle: [230, 550],
    right_ankle: [170, 550],
  };
  const keypoints = (changes: Partial<Record<KeypointName, { x?: number; y?: number; score?: number }>> = {}, score = 0.9): Keypoint[] =>
    KEYPOINT_NAMES.map((name) => ({ name, x: STANDING[name][0], y: STANDING[name][1], score, ...changes[name] }));
  const unseen = (...names: KeypointName[]) => Object.fromEntries(names.map((name) => [name, { score: 0.1 }]));
  const labels = (garments: Garment[]) => garments.map(({ label }) => label);
  const contains = (box: Box, [x, y]: [number, number]) => box[0] <= x && x <= box[2] && box[1] <= y && y <= box[3];

  /** Whole pixels, inside the person's box and the image, at least MIN_GARMENT_SIDE each way, ordered top to bottom. */
  function assertWellFormed(garments: Garment[], person: Box = PERSON): void {
    for (const { label, box } of garments) {
      assert.ok(box.every(Number.isInteger), `${label}: ${box.join(',')} not whole pixels`);
      assert.ok(box[0] >= Math.max(0, person[0]) && box[1] >= Math.max(0, person[1]), `${label} outside the person`);
      assert.ok(box[2] <= Math.min(IMAGE.width, person[2]) && box[3] <= Math.min(IMAGE.height, person[3]), `${label} outside the person`);
      assert.ok(box[2] - box[0] >= MIN_GARMENT_SIDE && box[3] - box[1] >= MIN_GARMENT_SIDE, `${label} too small`);
    }
    for (let i = 1; i < garments.length; i++) assert.ok(garments[i - 1]!.box[1] <= garments[i]!.box[1], 'not ordered top to bottom');
  }

  test('a whole person: top, bottom, then a shoe per ankle, left to right in the picture', () => {
    const garments = garmentBoxes(keypoints(), PERSON, IMAGE.width, IMAGE.height);
    assertWellFormed(garments);
    assert.deepEqual(labels(garments), ['Top', 'Bottom', 'Shoe', 'Shoe']);
    const [top, bottom, rightShoe, leftShoe] = garments.map(({ box }) => box) as [Box, Box, Box, Box];
    for (const name of ['left_shoulder', 'right_shoulder', 'left_hip', 'right_hip', 'left_wrist', 'right_wrist'] as const) {
      assert.ok(contains(top, STANDING[name]), `top misses ${name}`);
    }
    assert.ok(top[1] < STANDING.left_shoulder[1] && top[3] > STANDING.left_hip[1], 'top not past shoulders and hips');
    for (const name of ['left_hip', 'right_hip', 'left_knee', 'right_knee', 'left_ankle', 'right_ankle'] as const) {
      assert.ok(contains(bottom, STANDING[name]), `bottom misses ${name}`);
    }
    assert.ok(contains(rightShoe, STANDING.right_ankle) && contains(leftShoe, STANDING.left_ankle));
    // Sized from the lower leg (120 px): about as wide as half of it either side, reaching below the ankle.
    assert.ok(leftShoe[2] - leftShoe[0] > 60 && leftShoe[2] - leftShoe[0] < 120, `shoe ${leftShoe.join(',')}`);
    assert.ok(leftShoe[3] - STANDING.left_ankle[1] > STANDING.left_ankle[1] - leftShoe[1], 'shoe not mostly below the ankle');
  });

  test('no ankles: the bottom ends at the knees and there are no shoes', () => {
    const garments = garmentBoxes(keypoints(unseen('left_ankle', 'right_ankle')), PERSON, IMAGE.width, IMAGE.height);
    assertWellFormed(garments);
    assert.deepEqual(labels(garments), ['Top', 'Bottom']);
    const bottom = garments[1]!.box;
    assert.ok(bottom[3] > STANDING.left_knee[1] && bottom[3] < STANDING.left_ankle[1] - 40, `bottom ${bottom.join(',')}`);
  });

  test('one ankle: one shoe, around it', () => {
    const garments = garmentBoxes(keypoints(unseen('right_ankle')), PERSON, IMAGE.width, IMAGE.height);
    assertWellFormed(garments);
    assert.deepEqual(labels(garments), ['Top', 'Bottom', 'Shoe']);
    assert.ok(contains(garments[2]!.box, STANDING.left_ankle));
  });

  test('a hidden knee: the other leg sizes the shoe; no lower leg at all: no shoes', () => {
    const whole = garmentBoxes(keypoints(), PERSON, IMAGE.width, IMAGE.height);
    const kneeHidden = garmentBoxes(keypoints(unseen('left_knee')), PERSON, IMAGE.width, IMAGE.height);
    assert.deepEqual(labels(kneeHidden), ['Top', 'Bottom', 'Shoe', 'Shoe']);
    assert.deepEqual(kneeHidden[3]!.box, whole[3]!.box);
    // One leg's knee and the other's ankle measure no lower leg.
    assert.deepEqual(labels(garmentBoxes(keypoints(unseen('left_knee', 'right_ankle')), PERSON, IMAGE.width, IMAGE.height)), ['Top', 'Bottom']);
    assert.deepEqual(labels(garmentBoxes(keypoints(unseen('left_knee', 'right_knee')), PERSON, IMAGE.width, IMAGE.height)), ['Top', 'Bottom']);
  });

  test('nothing from keypoints below the score floor', () => {
    assert.deepEqual(garmentBoxes(keypoints({}, MIN_KEYPOINT_SCORE - 0.01), PERSON, IMAGE.width, IMAGE.height), []);
    // Shoulders unseen: no top, the rest stays.
    const garments = garmentBoxes(keypoints(unseen('left_shoulder', 'right_shoulder')), PERSON, IMAGE.width, IMAGE.height);
    assert.deepEqual(labels(garments), ['Bottom', 'Shoe', 'Shoe']);
    // Hips unseen: neither top nor bottom.
    assert.deepEqual(labels(garmentBoxes(keypoints(unseen('left_hip', 'right_hip')), PERSON, IMAGE.width, IMAGE.height)), ['Shoe', 'Shoe']);
  });

  test('hips below the picture (head and shoulders): a top from the shoulders to the bottom edge, as wide as the torso', () => {
    // The picture ends at 180, 60 px below the shoulders: arms, hips and legs are out of it.
    const below: KeypointName[] = ['left_elbow', 'right_elbow', 'left_wrist', 'right_wrist', 'left_hip', 'right_hip', 'left_knee', 'right_knee', 'left_ankle', 'right_ankle'];
    const cut = keypoints(unseen(...below));
    const person: Box = [100, 0, 300, 180];
    const garments = garmentBoxes(cut, person, IMAGE.width, 180);
    assertWellFormed(garments, person);
    assert.deepEqual(labels(garments), ['Top']);
    const top = garments[0]!.box;
    assert.ok(contains(top, STANDING.left_shoulder) && contains(top, STANDING.right_shoulder), `top ${top.join(',')}`);
    assert.ok(top[1] > STANDING.nose[1] && top[3] === 180, `top ${top.join(',')}`);
    assert.ok(top[0] > person[0] && top[2] < person[2], `top ${top.join(',')} as wide as the person`);
    // One shoulder measures no torso.
    assert.deepEqual(garmentBoxes(keypoints(unseen(...below, 'left_shoulder')), person, IMAGE.width, 180), []);
    // A picture reaching below where the shoulders put the hips: they are hidden, not cut off; no top.
    assert.deepEqual(garmentBoxes(cut, [100, 0, 300, 250], IMAGE.width, 250), []);
  });

  test('arms widen the top only above the hips', () => {
    const reaching = garmentBoxes(keypoints({ left_wrist: { x: 295, y: 150 } }), PERSON, IMAGE.width, IMAGE.height)[0]!;
    assert.ok(reaching.box[2] >= 295, `top ${reaching.box.join(',')}`);
    const hanging = garmentBoxes(keypoints({ left_wrist: { x: 295, y: 380 } }), PERSON, IMAGE.width, IMAGE.height)[0]!;
    assert.ok(hanging.box[2] < 295, `top ${hanging.box.join(',')}`);
  });

  test('boxes stay inside a tight person box and the image; what is left too small is dropped', () => {
    // The box stops at the knees: the bottom is cut there, the shoes are gone.
    const cut: Box = [150.4, 30.6, 250.5, 440.2];
    const garments = garmentBoxes(keypoints(), cut, IMAGE.width, IMAGE.height);
    assertWellFormed(garments, [151, 31, 250, 440]);
    assert.deepEqual(labels(garments), ['Top', 'Bottom']);
    // A person box past the image's edges.
    const past: Box = [-50, -20, 450, 720];
    assertWellFormed(garmentBoxes(keypoints({ left_ankle: { y: 690 }, right_ankle: { y: 690 } }), past, IMAGE.width, IMAGE.height), past);
    // A person a few pixels tall.
    const tiny = keypoints().map((keypoint) => ({ ...keypoint, x: keypoint.x / 50, y: keypoint.y / 50 }));
    assert.deepEqual(garmentBoxes(tiny, [0, 0, 10, 14], IMAGE.width, IMAGE.height), []);
  });
});
