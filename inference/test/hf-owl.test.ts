/**
 * The OWL-ViT and OWLv2 detectors (src/models/detect/hf/owl.ts) on tiny folders in the export's layout (tiny-owl.ts),
 * whose right answers are known by construction: "red" boxes the red cell of a grid image, in the original image's
 * pixels, on non-square images (OWLv2: fractions of the padded square, as Python transformers scales them); the
 * post-processing against @huggingface/transformers' own on the same raw outputs, and where and why they differ;
 * what stops loading.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OwlViTImageProcessor, Tensor } from '@huggingface/transformers';
import type { RgbPixels } from '../src/image/decode.ts';
import type { Detection, Detector } from '../src/models/detect/detector.ts';
import { boxScale, fetchOwlModel, loadOwlDetector, OWL_MODEL_TYPES, owlDetections } from '../src/models/detect/hf/owl.ts';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Float32Tensor, Runtime } from '../src/runtime/runtime.ts';
import { channelMeanGraph, COLOURS, info, writeClip, type Rgb } from './tiny-models.ts';
import { sizedOwlGraph, type OwlShape } from '../scripts/sized-owl.ts';
import { OWL_GRID, owlColourVector, owlGraph, owlTable, owlTokenizer, writeOwlV2, writeOwlVit } from './tiny-owl.ts';

let runtime: Runtime;
let root: string;
const folder = (name: string) => path.join(root, name);
const load = (dir: string, file = 'fp32') => loadOwlDetector(runtime, folderModelFiles(dir), { file });

before(async () => {
  runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  root = mkdtempSync(path.join(tmpdir(), 'hf-owl-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const WHITE: Rgb = [255, 255, 255];

/** A width x height image cut into a 4x4 grid (cells of width/4 x height/4), white but for the cells named. */
function grid(width: number, height: number, cells: ReadonlyArray<{ x: number; y: number; rgb: Rgb }>): RgbPixels {
  const data = Buffer.alloc(width * height * 3);
  const cellWidth = width / OWL_GRID;
  const cellHeight = height / OWL_GRID;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const cell = cells.find((c) => Math.floor(x / cellWidth) === c.x && Math.floor(y / cellHeight) === c.y);
      data.set(cell?.rgb ?? WHITE, (y * width + x) * 3);
    }
  }
  return { data, width, height };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);

const assertBox = (actual: readonly number[], expected: readonly number[]) => {
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(actual[i]! - expected[i]!) < 1e-3, `box [${actual.join(', ')}], expected [${expected.join(', ')}]`);
};

/** The detections sorted by label, for comparing sets. */
const byLabel = (detections: Detection[]) => [...detections].sort((a, b) => a.label.localeCompare(b.label));

describe('OWL-ViT (Xenova/owlvit-base-patch32\'s layout)', () => {
  let detector: Detector;
  before(async () => {
    detector = await load(writeOwlVit(folder('owlvit-tiny')));
  });

  test('an open-vocabulary detector with no labels of its own; the id names the folder, a hash, the file', () => {
    assert.equal(detector.openVocabulary, true);
    assert.deepEqual(detector.labels, []);
    assert.match(detector.modelId, /^owlvit-tiny@sha256-[0-9a-f]{8}\/model\/detect$/);
    assert.deepEqual(OWL_MODEL_TYPES, ['owlvit', 'owlv2']);
  });

  test('"red" boxes the red cell of a 64x32 image (stretched to the square input), in the image\'s own pixels', async () => {
    const image = grid(64, 32, [{ x: 2, y: 1, rgb: COLOURS.red }, { x: 0, y: 3, rgb: COLOURS.green }]);
    const found = await detector.detect(image, 0.5, ['red']);
    assert.equal(found.length, 1);
    assert.equal(found[0]!.label, 'red');
    assert.ok(found[0]!.score > 0.99, `score ${found[0]!.score}`);
    // Cell (2, 1) of a 4x4 grid over 64x32: 16 wide, 8 high.
    assertBox(found[0]!.box, [32, 8, 48, 16]);
  });

  test('each patch reports its best prompt, labelled with that prompt; the prompt list in any order', async () => {
    const image = grid(64, 32, [{ x: 2, y: 1, rgb: COLOURS.red }, { x: 0, y: 3, rgb: COLOURS.green }, { x: 3, y: 0, rgb: COLOURS.blue }]);
    for (const prompts of [['a photo of red', 'green', 'blue'], ['blue', 'green', 'a photo of red']]) {
      const found = byLabel(await detector.detect(image, 0.5, prompts));
      assert.deepEqual(found.map(({ label }) => label), ['a photo of red', 'blue', 'green']);
      assertBox(found[0]!.box, [32, 8, 48, 16]);
      assertBox(found[1]!.box, [48, 0, 64, 8]);
      assertBox(found[2]!.box, [0, 24, 16, 32]);
    }
  });

  test('scores are the sigmoid of patch . prompt; no prompts find nothing; a long prompt is cut to 16 tokens', async () => {
    const image = grid(64, 32, [{ x: 2, y: 1, rgb: COLOURS.red }]);
    const all = await detector.detect(image, 0, ['green']);
    assert.equal(all.length, OWL_GRID * OWL_GRID);
    const white = all.find(({ box }) => box[0] === 0 && box[1] === 0)!;
    assert.ok(Math.abs(white.score - sigmoid(dot(owlColourVector(WHITE), owlColourVector(COLOURS.green)))) < 1e-3, `white patch ${white.score}`);
    assert.deepEqual(await detector.detect(image, 0.5, []), []);
    assert.deepEqual(await detector.detect(image, 0.5), []);
    // 20 words and the two special tokens: cut to 16 (the graph takes no other length), "red" first still counts.
    const long = await detector.detect(image, 0.5, [`red ${'a '.repeat(19)}`]);
    assert.equal(long.length, 1);
  });
});

describe('OWLv2 (google/owlv2-base-patch16-ensemble\'s layout): padded to a square first', () => {
  let detector: Detector;
  before(async () => {
    detector = await load(writeOwlV2(folder('owlv2-tiny')));
  });

  test('a wide 64x32 image is padded below to 64x64: "red" in its cell (2, 1) of 16x16 pixels, boxed in image pixels', async () => {
    const image = grid(64, 64, []);
    // The image is the top half of a 64x64 square: its red cell at x 32-48, y 16-32.
    const wide: RgbPixels = { data: image.data.subarray(0, 64 * 32 * 3), width: 64, height: 32 };
    for (let y = 16; y < 32; y++) for (let x = 32; x < 48; x++) wide.data.set(COLOURS.red, (y * 64 + x) * 3);
    const found = await detector.detect(wide, 0.5, ['red']);
    assert.equal(found.length, 1);
    assert.ok(found[0]!.score > 0.99, `score ${found[0]!.score}`);
    assertBox(found[0]!.box, [32, 16, 48, 32]);
  });

  test('a tall 32x64 image is padded on the right: boxes scale by the longer side on both axes', async () => {
    const tall = grid(32, 64, []);
    for (let y = 48; y < 64; y++) for (let x = 16; x < 32; x++) tall.data.set(COLOURS.red, (y * 32 + x) * 3);
    const found = await detector.detect(tall, 0.5, ['red']);
    assert.equal(found.length, 1);
    assertBox(found[0]!.box, [16, 48, 32, 64]);
  });

  test('the padding is grey 0.5 (after rescaling): the padded patches score as grey does', async () => {
    const wide = grid(64, 32, []);
    const all = await detector.detect(wide, 0, ['red']);
    const grey = owlColourVector([127.5, 127.5, 127.5]);
    // The last row of cells (y 48-64 of the 64x64 square) is padding alone.
    const padded = all.filter(({ box }) => box[1] >= 48);
    assert.equal(padded.length, OWL_GRID);
    for (const { score } of padded) assert.ok(Math.abs(score - sigmoid(dot(grey, owlColourVector(COLOURS.red)))) < 0.01, `padded patch ${score}`);
  });
});

describe('post-processing against @huggingface/transformers 4.3.1 on the same raw outputs', () => {
  /** Deterministic logits in [-4, 4] and boxes inside the unit square, [1, patches, prompts] and [1, patches, 4]. */
  function rawOutputs(patches: number, prompts: number): { logits: Float32Tensor; boxes: Float32Tensor } {
    let seed = 7;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const logits = Float32Array.from({ length: patches * prompts }, () => next() * 8 - 4);
    const boxes = Float32Array.from({ length: patches * 4 }, (_, i) => (i % 4 < 2 ? 0.2 + next() * 0.6 : 0.05 + next() * 0.3));
    return { logits: { data: logits, shape: [1, patches, prompts] }, boxes: { data: boxes, shape: [1, patches, 4] } };
  }

  /**
   * transformers.js' OwlViTImageProcessor.post_process_object_detection (is_zero_shot), target size [height, width],
   * as detections. It reports every prompt above the threshold at a patch; Python's (and owl.ts) only the patch's
   * best, so where a patch gives several, its best alone is kept here.
   */
  function transformersJs(raw: { logits: Float32Tensor; boxes: Float32Tensor }, prompts: string[], threshold: number, size: [number, number]): { best: Detection[]; all: number } {
    const processor = new OwlViTImageProcessor({});
    const outputs = { logits: new Tensor('float32', raw.logits.data, [...raw.logits.shape]), pred_boxes: new Tensor('float32', raw.boxes.data, [...raw.boxes.shape]) };
    const [result] = processor.post_process_object_detection(outputs, threshold, [size], true) as { boxes: number[][]; classes: number[]; scores: number[] }[];
    const best = new Map<string, Detection>();
    result!.boxes.forEach((box, i) => {
      const key = box.join(',');
      const score = result!.scores[i]!;
      if (!best.has(key) || best.get(key)!.score < score) best.set(key, { label: prompts[result!.classes[i]!]!, score, box: box as [number, number, number, number] });
    });
    return { best: [...best.values()], all: result!.boxes.length };
  }

  const sortByBox = (detections: Detection[]) => [...detections].sort((a, b) => a.box[0] - b.box[0] || a.box[1] - b.box[1]);
  const assertSame = (actual: Detection[], expected: Detection[]) => {
    assert.equal(actual.length, expected.length);
    const [a, e] = [sortByBox(actual), sortByBox(expected)];
    a.forEach((detection, i) => {
      assert.equal(detection.label, e[i]!.label);
      assert.ok(Math.abs(detection.score - e[i]!.score) < 1e-6, `score ${detection.score} vs ${e[i]!.score}`);
      assertBox(detection.box, e[i]!.box);
    });
  };

  const prompts = ['a cat', 'a dog', 'a chair'];
  const raw = rawOutputs(40, prompts.length);

  test('OWL-ViT: the same boxes (corners times the image\'s width and height), labels and sigmoid scores', () => {
    const ours = owlDetections(raw.logits, raw.boxes, prompts, boxScale('owlvit', 300, 200), 0.3);
    const theirs = transformersJs(raw, prompts, 0.3, [200, 300]);
    assert.ok(ours.length > 5);
    assertSame(ours, theirs.best);
    // The one departure: transformers.js also reports a patch's other prompts above the threshold; Python does not.
    assert.ok(theirs.all > theirs.best.length, 'some patch has two prompts above the threshold');
  });

  test('OWLv2 follows Python, not transformers.js: boxes are fractions of the padded square, scaled by its side', () => {
    const ours = owlDetections(raw.logits, raw.boxes, prompts, boxScale('owlv2', 300, 200), 0.3);
    // Python's Owlv2ImageProcessor scales both axes by max(height, width): transformers.js with the square's size.
    assertSame(ours, transformersJs(raw, prompts, 0.3, [300, 300]).best);
    // transformers.js 4.3.1 scales by the image's own height, as for OWL-ViT (it does not pad either): other y's.
    const asJs = transformersJs(raw, prompts, 0.3, [200, 300]).best;
    assert.notDeepEqual(sortByBox(ours).map(({ box }) => box[1]), sortByBox(asJs).map(({ box }) => box[1]));
  });
});

describe('the graphs of real shapes that npm run bench -- --only detector times (scripts/sized-owl.ts)', () => {
  const tower = { width: 32, heads: 4, layers: 2, mlp: 64 };
  const small = (family: OwlShape['family']): OwlShape => ({ family, imageSize: 64, patch: 16, vision: tower, text: { ...tower, vocabulary: 50 }, projection: 16 });

  for (const [family, write] of [['owlvit', writeOwlVit], ['owlv2', writeOwlV2]] as const) {
    test(`${family}: the service loads it and answers each of its 4x4 patches with one of the prompts`, async () => {
      const detector = await load(write(folder(`sized-${family}`), { graph: sizedOwlGraph(small(family)), imageSize: 64, patch: 16 }));
      const prompts = ['red', 'green', 'blue'];
      const found = await detector.detect(grid(96, 64, [{ x: 1, y: 1, rgb: COLOURS.red }]), 0, prompts);
      assert.equal(found.length, 16);
      for (const { label, box } of found) {
        assert.ok(prompts.includes(label), label);
        assert.ok(box.every(Number.isFinite), `box [${box.join(', ')}]`);
      }
    });
  }
});

describe('what stops loading, with its message', () => {
  test('a model_type that is no OWL detector', async () => {
    await assert.rejects(load(writeClip(folder('clip-for-owl'))), /model_type "clip" is not an OWL detector \(supported: owlvit, owlv2\)/);
  });

  test('a missing ONNX file (file=quantized), tokenizer.json, preprocessor_config.json; fetching refuses alike', async () => {
    const dir = writeOwlVit(folder('owl-missing'));
    await assert.rejects(load(dir, 'quantized'), /has no onnx\/model_quantized\.onnx \(the OWL-ViT detector, file=quantized\); its ONNX files: onnx\/model\.onnx/);
    // fetchOwlModel (before the service listens) refuses the same, without a runtime.
    await assert.rejects(fetchOwlModel(folderModelFiles(dir), { file: 'quantized' }), /has no onnx\/model_quantized\.onnx/);
    await fetchOwlModel(folderModelFiles(dir), { file: 'fp32' });
    assert.match((await load(writeOwlVit(folder('owl-quantized'), { quantized: true }), 'quantized')).modelId, /\/model_quantized\/detect$/);
    unlinkSync(path.join(dir, 'tokenizer.json'));
    await assert.rejects(load(dir), /owl-missing has no tokenizer\.json/);
    unlinkSync(path.join(dir, 'preprocessor_config.json'));
    await assert.rejects(load(dir), /owl-missing has no preprocessor_config\.json/);
  });

  test('an export without logits and pred_boxes, or with inputs of other names', async () => {
    await assert.rejects(load(writeOwlVit(folder('owl-no-boxes'), { graph: channelMeanGraph('logits', 32) })), /model\.onnx has no output "pred_boxes"/);
    const { vocabulary } = owlTokenizer();
    const extra = owlGraph(owlTable(vocabulary), [info('token_type_ids', 'int64', ['num_queries', 16])]);
    await assert.rejects(
      load(writeOwlVit(folder('owl-extra-input'), { graph: extra })),
      /model\.onnx takes input_ids, attention_mask, pixel_values, token_type_ids; an OWL detector takes input_ids, pixel_values and optionally attention_mask/,
    );
  });

  test('another input size than the preprocessing gives', async () => {
    const dir = writeOwlV2(folder('owl-size'));
    writeFileSync(path.join(dir, 'preprocessor_config.json'), JSON.stringify({ do_pad: true, size: { height: 48, width: 48 } }));
    await assert.rejects(load(dir), /takes pixel_values of shape \[batch_size, 3, 32, 32\]; its preprocessing gives \[1, 3, 48, 48\]/);
  });
});
