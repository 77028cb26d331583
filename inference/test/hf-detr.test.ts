/**
 * DETR-family detectors in the Hugging Face layout (src/models/detect/hf/detr.ts), on tiny folders (tiny-detr.ts)
 * whose answers are known by construction: each family finds a red and a blue block on a non-square image, with
 * boxes in its pixels; the sizing rules of DETR's and YOLOS' processors; the post-processing against
 * @huggingface/transformers' own on the same raw outputs; what stops loading.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RgbPixels } from '../src/image/decode.ts';
import { DETR_MODEL_TYPES, loadDetrDetector, postProcessObjectDetection, type Scoring } from '../src/models/detect/hf/detr.ts';
import { detrAspectSize, shortestEdgeSize } from '../src/models/embed/hf/image-processor.ts';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, Runtime } from '../src/runtime/runtime.ts';
import { CLASSES, quadrantDetrGraph, writeTinyDetr, type TinyDetrFamily } from './tiny-detr.ts';
import { channelMeanGraph, COLOURS } from './tiny-models.ts';

let runtime: Runtime;
let root: string;
const folder = (name: string) => path.join(root, name);
const load = (dir: string, file = 'fp32') => loadDetrDetector(runtime, folderModelFiles(dir), { file });

before(async () => {
  runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  root = mkdtempSync(path.join(tmpdir(), 'hf-detr-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

/** 120x80, black: a red block on the top-left quarter, a blue one on the bottom-right quarter. */
const WIDTH = 120;
const HEIGHT = 80;
const blocks = (): RgbPixels => {
  const data = Buffer.alloc(WIDTH * HEIGHT * 3);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      if (x < WIDTH / 2 && y < HEIGHT / 2) data.set(COLOURS.red, (y * WIDTH + x) * 3);
      if (x >= WIDTH / 2 && y >= HEIGHT / 2) data.set(COLOURS.blue, (y * WIDTH + x) * 3);
    }
  }
  return { data, width: WIDTH, height: HEIGHT };
};

const FAMILIES: TinyDetrFamily[] = ['detr', 'conditional_detr', 'yolos', 'rt_detr', 'rt_detr_v2'];

describe('each family finds the coloured blocks', () => {
  for (const family of FAMILIES) {
    test(family, async () => {
      const detector = await load(writeTinyDetr(folder(family), family));
      assert.equal(detector.openVocabulary, false);
      assert.deepEqual(detector.labels, CLASSES);
      assert.match(detector.modelId, new RegExp(`^${family}@sha256-[0-9a-f]{8}/model$`));
      const found = (await detector.detect(blocks(), 0.5)).sort((a, b) => a.label.localeCompare(b.label));
      assert.deepEqual(
        found.map(({ label }) => label),
        ['blue', 'red'],
      );
      const [blue, red] = found;
      // The quadrants in the original's pixels, not the resized input's (48x32, or RT-DETR's 32x32 stretch).
      assert.deepEqual(red!.box, [0, 0, 60, 40]);
      assert.deepEqual(blue!.box, [60, 40, 120, 80]);
      for (const { score } of found) assert.ok(score > 0.9 && score <= 1, `${score}`);
      // Nothing in the black quarters, even at a low floor.
      assert.equal((await detector.detect(blocks(), 0.05)).length, 2);
    });
  }

  test('file= picks onnx/model_<file>.onnx, named in the id', async () => {
    const detector = await load(writeTinyDetr(folder('detr-quantized'), 'detr', { quantized: true }), 'quantized');
    assert.match(detector.modelId, /^detr-quantized@sha256-[0-9a-f]{8}\/model_quantized$/);
    assert.equal((await detector.detect(blocks(), 0.5)).length, 2);
  });

  test('every model type is listed', () => assert.deepEqual(DETR_MODEL_TYPES, FAMILIES));
});

describe('sizing as the processors size', () => {
  test('DETR rounds the capped short side where the generic rule truncates', () => {
    // image_processing_detr.get_size_with_aspect_ratio((150, 1000), 800, 1333) == (200, 1333).
    assert.deepEqual(detrAspectSize(1000, 150, 800, 1333, 'detr'), { width: 1333, height: 200 });
    assert.deepEqual(shortestEdgeSize(1000, 150, 800, 1333), { width: 1333, height: 199 });
    assert.deepEqual(detrAspectSize(640, 480, 800, 1333, 'detr'), { width: 1066, height: 800 });
    assert.deepEqual(detrAspectSize(480, 640, 800, 1333, 'detr'), { width: 800, height: 1066 });
    // Already at size: unchanged.
    assert.deepEqual(detrAspectSize(1000, 800, 800, 1333, 'detr'), { width: 1000, height: 800 });
  });

  test('YOLOS rounds both sides down to multiples of 16', () => {
    assert.deepEqual(detrAspectSize(1000, 150, 800, 1333, 'yolos'), { width: 1328, height: 192 });
    assert.deepEqual(detrAspectSize(150, 1000, 800, 1333, 'yolos'), { width: 192, height: 1328 });
    assert.deepEqual(detrAspectSize(1000, 800, 800, 1333, 'yolos'), { width: 992, height: 800 });
  });
});

describe('post-processing as transformers', () => {
  // Loaded lazily: the package is large, and only this suite needs it.
  const transformers = () => import('@huggingface/transformers');

  /** Seeded raw outputs: logits [1, Q, C] around 0 with a few strong ones, boxes [1, Q, 4] inside the image. */
  const raw = (queries: number, classes: number, seed: number) => {
    let state = seed;
    const random = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
    const logits: Float32Tensor = { data: Float32Array.from({ length: queries * classes }, () => (random() - 0.5) * 6 + (random() < 0.1 ? 6 : 0)), shape: [1, queries, classes] };
    const boxes: Float32Tensor = { data: Float32Array.from({ length: queries * 4 }, (_, i) => (i % 4 < 2 ? 0.2 + random() * 0.6 : 0.05 + random() * 0.3)), shape: [1, queries, 4] };
    return { logits, boxes };
  };

  test('DETR and YOLOS (softmax, the last class "no object") agree with DetrImageProcessor and YolosImageProcessor', async () => {
    const { DetrImageProcessor, YolosImageProcessor, Tensor } = await transformers();
    for (const [seed, Processor] of [[1, DetrImageProcessor], [2, YolosImageProcessor]] as const) {
      const { logits, boxes } = raw(100, 6, seed);
      const ours = postProcessObjectDetection(logits, boxes, { kind: 'softmax' }, WIDTH, HEIGHT, 0.5);
      const outputs = { logits: new Tensor('float32', logits.data, [...logits.shape]), pred_boxes: new Tensor('float32', boxes.data, [...boxes.shape]) };
      const [theirs] = Processor.prototype.post_process_object_detection.call(null, outputs, 0.5, [[HEIGHT, WIDTH]]) as { boxes: number[][]; classes: number[]; scores: number[] }[];
      assert.ok(ours.length > 5, `${ours.length} detections`);
      assert.equal(ours.length, theirs!.scores.length);
      ours.forEach(({ classIndex, score, box }, i) => {
        assert.equal(classIndex, theirs!.classes[i]);
        assert.ok(Math.abs(score - theirs!.scores[i]!) < 1e-6);
        box.forEach((value, j) => assert.ok(Math.abs(value - theirs!.boxes[i]![j]!) < 1e-4));
      });
    }
  });

  test('under 0.5, Python keeps a query whose argmax is "no object" (its best real class); transformers.js drops it', async () => {
    // One query: no object 0.6, class 0 0.3, class 1 0.1 (as logits). Python: prob[..., :-1].max(-1) -> class 0, 0.3.
    const logits: Float32Tensor = { data: Float32Array.from([Math.log(0.3), Math.log(0.1), Math.log(0.6)]), shape: [1, 1, 3] };
    const boxes: Float32Tensor = { data: Float32Array.from([0.5, 0.5, 1, 1]), shape: [1, 1, 4] };
    const [only] = postProcessObjectDetection(logits, boxes, { kind: 'softmax' }, WIDTH, HEIGHT, 0.2);
    assert.equal(only!.classIndex, 0);
    assert.ok(Math.abs(only!.score - 0.3) < 1e-6);
    assert.deepEqual(only!.box, [0, 0, WIDTH, HEIGHT]);
    const { DetrImageProcessor, Tensor } = await transformers();
    const outputs = { logits: new Tensor('float32', logits.data, [1, 1, 3]), pred_boxes: new Tensor('float32', boxes.data, [1, 1, 4]) };
    assert.equal((DetrImageProcessor.prototype.post_process_object_detection.call(null, outputs, 0.2, [[HEIGHT, WIDTH]]) as { scores: number[] }[])[0]!.scores.length, 0);
  });

  test('conditional DETR and RT-DETR (sigmoid, top-k over queries x classes) follow Python, not transformers.js', async () => {
    // Query 0 is sure of two classes; query 1 of none. Python (sigmoid, topk over the 2 x 3 pairs): both of query 0's
    // classes, same box. transformers.js runs RT-DETR through the DETR softmax, the last class taken as "no object".
    const logits: Float32Tensor = { data: Float32Array.from([5, 4, -5, -5, -5, -5]), shape: [1, 2, 3] };
    const boxes: Float32Tensor = { data: Float32Array.from([0.25, 0.5, 0.5, 1, 0.75, 0.5, 0.5, 1]), shape: [1, 2, 4] };
    const rtDetr: Scoring = { kind: 'sigmoid' };
    const ours = postProcessObjectDetection(logits, boxes, rtDetr, WIDTH, HEIGHT, 0.5);
    assert.deepEqual(ours.map(({ classIndex }) => classIndex), [0, 1]);
    assert.ok(Math.abs(ours[0]!.score - 1 / (1 + Math.exp(-5))) < 1e-7);
    assert.deepEqual(ours[1]!.box, [0, 0, 60, 80]);
    const { RTDetrImageProcessor, Tensor } = await transformers();
    const outputs = { logits: new Tensor('float32', logits.data, [1, 2, 3]), pred_boxes: new Tensor('float32', boxes.data, [1, 2, 4]) };
    const [theirs] = RTDetrImageProcessor.prototype.post_process_object_detection.call(null, outputs, 0.5, [[HEIGHT, WIDTH]]) as { classes: number[] }[];
    assert.deepEqual(theirs!.classes, [0]);
    // Conditional DETR keeps the best 100 pairs (top_k=100), RT-DETR as many as there are queries.
    const many: Float32Tensor = { data: new Float32Array(60 * 3).fill(3), shape: [1, 60, 3] };
    const manyBoxes: Float32Tensor = { data: new Float32Array(60 * 4).fill(0.5), shape: [1, 60, 4] };
    assert.equal(postProcessObjectDetection(many, manyBoxes, { kind: 'sigmoid', topK: 100 }, WIDTH, HEIGHT, 0.5).length, 100);
    assert.equal(postProcessObjectDetection(many, manyBoxes, rtDetr, WIDTH, HEIGHT, 0.5).length, 60);
  });
});

describe('what stops loading', () => {
  const refuses = async (name: string, family: TinyDetrFamily, extra: Parameters<typeof writeTinyDetr>[2], message: RegExp, file?: string) => {
    await assert.rejects(load(writeTinyDetr(folder(name), family, extra), file), message);
  };

  test('a model type not of the family', () =>
    refuses('owl', 'detr', { config: { model_type: 'owlvit' } }, /config.json model_type "owlvit" is not a detector of the DETR family \(supported: detr, conditional_detr, yolos, rt_detr, rt_detr_v2\)/));
  test('no id2label', () => refuses('no-labels', 'detr', { config: { id2label: undefined } }, /config.json at id2label: missing: the class names/));
  test('id2label with gaps', () => refuses('gaps', 'detr', { config: { id2label: { 0: 'red', 2: 'blue' } } }, /id2label must name classes 0 to n-1/));
  test('id2label that does not fit the logits', () => refuses('two-labels', 'rt_detr', { config: { id2label: { 0: 'red', 1: 'green' } } }, /logits \[1, 4, 3\] .* do not fit id2label's 2 classes/));
  test('a missing ONNX file', () => refuses('no-int8', 'yolos', {}, /has no onnx\/model_int8.onnx \(the YOLOS model, file=int8\); its ONNX files: onnx\/model.onnx/, 'int8'));
  test('other input names', () =>
    refuses('images', 'yolos', { graph: quadrantDetrGraph({ noObject: true, pixelMask: false, inputName: 'images' }) }, /takes images; a DETR-family detector takes pixel_values \[and pixel_mask\]/));
  test('no pred_boxes', () => refuses('boxes', 'rt_detr', { graph: quadrantDetrGraph({ noObject: false, pixelMask: false, boxesName: 'boxes' }) }, /has no output pred_boxes \(its outputs: logits, boxes\)/));
  test('an embedder, not a detector', () => refuses('embedder', 'rt_detr', { graph: channelMeanGraph('pooler_output', 32) }, /has no output logits/));
  test('a fixed pad_size', () => refuses('pad', 'detr', { preprocessor: { pad_size: { height: 64, width: 64 } } }, /preprocessor_config.json has a pad_size, which is not supported/));
  test('a bare size for RT-DETR, whose resize needs both edges', () => refuses('rt-size', 'rt_detr', { preprocessor: { size: 640 } }, /size 640 is not supported by RT-DETR's image processor/));
  test('a shortest edge without a longest one for DETR', () => refuses('short', 'detr', { preprocessor: { size: { shortest_edge: 32 } } }, /size \{"shortest_edge":32\} is not supported/));
});
