/**
 * Clothes parsers in the Hugging Face layout (src/models/detect/hf/segformer.ts) on tiny SegFormer folders whose
 * class map follows colours (tiny-segformer.ts): regions and boxes in the input's pixels on non-square pictures,
 * separate blobs of one class, small regions and low scores dropped, the upsample and argmax against
 * transformers.js' own post-processing, the shipped label maps, and what stops loading.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SegformerImageProcessor, Tensor } from '@huggingface/transformers';
import type { RgbPixels } from '../src/image/decode.ts';
import type { Box } from '../src/image/view.ts';
import type { Detection, GarmentParser } from '../src/models/detect/detector.ts';
import { loadSegformerParser, MIN_REGION_FRACTION } from '../src/models/detect/hf/segformer.ts';
import { semanticSegmentation } from '../src/models/detect/hf/semantic-regions.ts';
import { loadLabelMap, mappedTypes } from '../src/models/detect/label-map.ts';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import type { Rgb } from './tiny-models.ts';
import { B2_CLOTHES_CLASSES, colourOf, FASHN_CLASSES, writeSegformer, type TinySegformerOptions } from './tiny-segformer.ts';

let runtime: Runtime;
let root: string;
let b2: GarmentParser;
const folder = (name: string) => path.join(root, name);
const load = (dir: string, file = 'fp32') => loadSegformerParser(runtime, folderModelFiles(dir), { file });
const write = (name: string, options: TinySegformerOptions = {}) => writeSegformer(folder(name), options);
const LABEL_MAPS = path.resolve(import.meta.dirname, '../config/parser-labels');

before(async () => {
  runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  root = mkdtempSync(path.join(tmpdir(), 'hf-segformer-'));
  b2 = await load(write('segformer_b2_clothes'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const colour = (label: string) => colourOf(B2_CLOTHES_CLASSES, label);

/** A white picture with rectangles [x1, y1, x2, y2) of the classes' colours. */
function picture(width: number, height: number, shapes: readonly (readonly [Rgb, Box])[]): RgbPixels {
  const data = Buffer.alloc(width * height * 3, 255);
  for (const [rgb, [x1, y1, x2, y2]] of shapes) {
    for (let y = y1; y < y2; y++) for (let x = x1; x < x2; x++) data.set(rgb, (y * width + x) * 3);
  }
  return { data, width, height };
}

/** The detections of a label, left to right. */
const of = (detections: readonly Detection[], label: string) => detections.filter((detection) => detection.label === label).sort((a, b) => a.box[0] - b.box[0]);

/** Within `tolerance` pixels on each edge: a logit cell is 4 input pixels, so a box's edges land within a few. */
function assertBox(actual: Box, expected: Box, tolerance = 3): void {
  assert.ok(actual.every((edge, i) => Math.abs(edge - expected[i]!) <= tolerance), `box [${actual.join(', ')}] vs [${expected.join(', ')}]`);
}

describe('SegFormer clothes parser (Xenova/segformer_b2_clothes\' layout)', () => {
  test('labels are id2label in order; the id names the folder, its hash, the file and the post-processing', () => {
    assert.deepEqual(b2.labels, B2_CLOTHES_CLASSES.map(([label]) => label));
    assert.match(b2.modelId, /^segformer_b2_clothes@sha256-[0-9a-f]{8}\/model\/logits-regions8-v1$/);
  });

  test('regions become boxes in the input pixels of a wide picture; the background is no detection', async () => {
    const top: Box = [40, 30, 160, 150];
    const pants: Box = [220, 60, 360, 220];
    const detections = await b2.parse(picture(400, 240, [[colour('Upper-clothes'), top], [colour('Pants'), pants]]), 0.2);
    assert.deepEqual(detections.map(({ label }) => label).sort(), ['Pants', 'Upper-clothes']);
    assertBox(of(detections, 'Upper-clothes')[0]!.box, top);
    assertBox(of(detections, 'Pants')[0]!.box, pants);
    for (const { score } of detections) assert.ok(score > 0.9 && score <= 1, `score ${score}`);
  });

  test('and of a tall one', async () => {
    const dress: Box = [20, 50, 130, 300];
    const bag: Box = [60, 330, 110, 390];
    const detections = await b2.parse(picture(150, 400, [[colour('Dress'), dress], [colour('Bag'), bag]]), 0.2);
    assertBox(of(detections, 'Dress')[0]!.box, dress);
    assertBox(of(detections, 'Bag')[0]!.box, bag);
    assert.equal(detections.length, 2);
  });

  test('two separate blobs of one class are two detections; the two shoes keep their labels', async () => {
    const left: Box = [30, 40, 110, 120];
    const right: Box = [200, 60, 290, 150];
    const shoes: Box[] = [[40, 200, 90, 240], [120, 200, 170, 240]];
    const detections = await b2.parse(
      picture(320, 260, [[colour('Upper-clothes'), left], [colour('Upper-clothes'), right], [colour('Left-shoe'), shoes[0]!], [colour('Right-shoe'), shoes[1]!]]),
      0.2,
    );
    const tops = of(detections, 'Upper-clothes');
    assert.equal(tops.length, 2);
    assertBox(tops[0]!.box, left);
    assertBox(tops[1]!.box, right);
    assertBox(of(detections, 'Left-shoe')[0]!.box, shoes[0]!);
    assertBox(of(detections, 'Right-shoe')[0]!.box, shoes[1]!);
  });

  test(`regions under ${MIN_REGION_FRACTION} of the picture are dropped`, async () => {
    // 8x8 px of bag is under 0.001 of 400x300 (120 px), 16x16 is over; on a 100x75 crop the small one counts too.
    const small: Box = [50, 50, 58, 58];
    const large: Box = [200, 150, 216, 166];
    const whole = await b2.parse(picture(400, 300, [[colour('Bag'), small], [colour('Bag'), large]]), 0);
    assert.equal(of(whole, 'Bag').length, 1);
    assertBox(of(whole, 'Bag')[0]!.box, large);
    const crop = await b2.parse(picture(100, 75, [[colour('Bag'), [20, 20, 28, 28]]]), 0);
    assert.equal(of(crop, 'Bag').length, 1);
  });

  test('regions scoring under minScore are dropped; a score is a mean probability', async () => {
    const pixels = picture(200, 160, [[colour('Skirt'), [20, 20, 100, 140]], [colour('Bag'), [120, 20, 180, 80]]]);
    const all = await b2.parse(pixels, 0);
    assert.equal(all.length, 2);
    const lowest = Math.min(...all.map(({ score }) => score));
    const kept = await b2.parse(pixels, lowest + 1e-9);
    assert.equal(kept.length, 1);
    assert.deepEqual(await b2.parse(pixels, 1.0000001), []);
  });

  test('an integer size is a square (SegformerImageProcessor\'s get_size_dict), no size 512x512', async () => {
    const square = await load(write('square', { preprocessor: { size: 256 } }));
    const detections = await square.parse(picture(300, 200, [[colour('Pants'), [60, 40, 240, 160]]]), 0.2);
    assertBox(of(detections, 'Pants')[0]!.box, [60, 40, 240, 160]);
    const unsized = await load(write('unsized', { preprocessor: { size: undefined } }));
    assert.equal((await unsized.parse(picture(64, 64, [[colour('Pants'), [0, 0, 32, 64]]]), 0.2)).length, 1);
  });
});

describe('upsample and argmax as transformers post-processes', () => {
  /** Deterministic pseudo-random logits in [-4, 4). */
  function randomLogits(classes: number, height: number, width: number): Float32Array {
    let state = 12345;
    return Float32Array.from({ length: classes * height * width }, () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return (state / 2147483648) * 8 - 4;
    });
  }

  for (const [height, width] of [[37, 50], [52, 68], [128, 80], [7, 5]] as const) {
    test(`logits [1, 18, 13, 17] to ${width}x${height}: the class map of transformers.js' post_process_semantic_segmentation`, () => {
      const data = randomLogits(18, 13, 17);
      const ours = semanticSegmentation({ data, shape: [1, 18, 13, 17] }, width, height);
      const processor = new SegformerImageProcessor({});
      const [theirs] = processor.post_process_semantic_segmentation({ logits: new Tensor('float32', data.slice(), [1, 18, 13, 17]) }, [[height, width]]);
      assert.deepEqual(Array.from(ours.classMap), Array.from(theirs!.segmentation.data as Int32Array));
    });
  }

  test('each pixel\'s probability is the softmax of its class over the upsampled logits', () => {
    // Logits of one position: the upsampled map is that everywhere.
    const logits = [1, 3, 2];
    const map = semanticSegmentation({ data: Float32Array.from(logits), shape: [1, 3, 1, 1] }, 3, 2);
    const expected = Math.exp(3) / logits.reduce((sum, value) => sum + Math.exp(value), 0);
    assert.ok(map.classMap.every((index) => index === 1));
    assert.ok(map.probabilities.every((p) => Math.abs(p - expected) < 1e-6));
  });
});

describe('label maps shipped for the public parsers', () => {
  test('segformer_b2_clothes.json maps its garments, each shoe to Shoe', () => {
    const map = loadLabelMap(path.join(LABEL_MAPS, 'segformer_b2_clothes.json'), b2.labels);
    assert.deepEqual(mappedTypes(map), ['Bag', 'Bottom', 'Dress', 'Eyewear', 'Shoe', 'Skirt', 'Top']);
    assert.equal(map.get('Left-shoe'), 'Shoe');
    assert.equal(map.get('Right-shoe'), 'Shoe');
  });

  test('fashn_human_parser.json, on a folder with FASHN\'s classes and its 384x576 Lanczos input', async () => {
    const fashn = await load(write('fashn-human-parser', { classes: FASHN_CLASSES, preprocessor: { size: { height: 576, width: 384 }, resample: 1 } }));
    const map = loadLabelMap(path.join(LABEL_MAPS, 'fashn_human_parser.json'), fashn.labels);
    assert.deepEqual(mappedTypes(map), ['Bag', 'Bottom', 'Dress', 'Eyewear', 'Jewlery', 'Skirt', 'Top']);
    const top: Box = [30, 20, 170, 120];
    const detections = await fashn.parse(picture(200, 300, [[colourOf(FASHN_CLASSES, 'top'), top]]), 0.2);
    assert.deepEqual(detections.map(({ label }) => label), ['top']);
    assertBox(detections[0]!.box, top);
  });
});

describe('what stops loading, naming the file and the problem', () => {
  const refuses = async (name: string, options: TinySegformerOptions, message: RegExp, file?: string) => {
    await assert.rejects(load(write(name, options), file), message);
  };

  test('no id2label', () => refuses('no-labels', { config: { id2label: undefined } }, /no-labels: config\.json at id2label: missing or not an object/));
  test('id2label keys other than 0..C-1', () => refuses('gap', { config: { id2label: { 0: 'Background', 2: 'Bag' } } }, /gap: config\.json id2label has the key "2"/));
  test('an unknown model_type', () => refuses('detr', { config: { model_type: 'detr' } }, /detr: model_type "detr" is not supported for a clothes parser \(supported: segformer\)/));
  test('an input other than pixel_values', () => refuses('input', { input: 'image' }, /input onnx\/model\.onnx takes image; an image tower here takes pixel_values alone/));
  test('no logits output', () => refuses('output', { output: 'last_hidden_state' }, /output onnx\/model\.onnx has no output logits \(its outputs: last_hidden_state\)/));
  test('logits with other classes than id2label', () =>
    refuses('classes', { config: { id2label: { 0: 'Background', 1: 'Bag' } } }, /classes onnx\/model\.onnx: logits is of shape \[batch_size, 18, logits_height, logits_width\], not \[N, 2, h, w\] \(2 classes in id2label\)/));
  test('a file variant the folder lacks', () => refuses('variant', {}, /variant has no onnx\/model_quantized\.onnx \(the segmenter, file=quantized\); its ONNX files: onnx\/model\.onnx/, 'quantized'));
});
