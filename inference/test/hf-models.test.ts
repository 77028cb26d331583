/**
 * Models in the Hugging Face layout (src/models/embed/hf/), on tiny model folders written here (tiny-models.ts):
 * each family loaded by folder path, preprocessing and text checked by construction, the file and pooling options,
 * the model id, what stops loading, and the registry's INFERENCE_EMBED_MODELS with a folder beside a built-in.
 */
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RgbPixels } from '../src/image/decode.ts';
import { MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { parseHfModelEntry, type HfModelOptions } from '../src/models/embed/hf/entry.ts';
import { familyOf } from '../src/models/embed/hf/families.ts';
import { loadHfEmbedder, MAX_EMBED_DIM } from '../src/models/embed/hf/hf-embedder.ts';
import { imageProcessingOf, shortestEdgeSize } from '../src/models/embed/hf/image-processor.ts';
import { loadTextTokenizer } from '../src/models/embed/hf/text-tokenizer.ts';
import { folderModelFiles } from '../src/models/hub/model-files.ts';
import { embedModelEntries, loadModels, modelSetFromEnv } from '../src/models/registry.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';
import type { Runtime } from '../src/runtime/runtime.ts';
import { cosine, png, runUntilExit, startServer } from './harness.ts';
import {
  channelMeanGraph,
  channelValues,
  CLIP_MEAN,
  CLIP_STD,
  COLOURS,
  HALF,
  IMAGENET_MEAN,
  IMAGENET_STD,
  unit,
  writeClip,
  writeDinov2,
  writeModelFolder,
  writeSiglip,
  tokenTableGraph,
  type Rgb,
} from './tiny-models.ts';

let runtime: Runtime;
let root: string;
const folder = (name: string) => path.join(root, name);
const fp32: HfModelOptions = { file: 'fp32' };
const load = (dir: string, options: HfModelOptions = fp32) => loadHfEmbedder(runtime, folderModelFiles(dir), options);

before(async () => {
  runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  root = mkdtempSync(path.join(tmpdir(), 'hf-models-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const solid = (rgb: Rgb, width = 50, height = 40): RgbPixels => {
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = rgb[i % 3]!;
  return { data, width, height };
};

/** 600x100: red, green and blue thirds. A centre crop of a shortest-edge resize sees green alone; a stretch sees all three. */
const stripes = (): RgbPixels => {
  const width = 600;
  const height = 100;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set(x < 200 ? COLOURS.red : x < 400 ? COLOURS.green : COLOURS.blue, (y * width + x) * 3);
  }
  return { data, width, height };
};

const assertClose = (actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-5) => {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i]! - expected[i]!) <= tolerance, `[${i}] ${actual[i]} vs ${expected[i]}`);
};

const norm = (vector: ArrayLike<number>) => Math.hypot(...Array.from(vector));

describe('CLIP (Xenova/clip-vit-base-patch32\'s layout)', () => {
  let clip: string;
  before(() => {
    clip = writeClip(folder('clip-vit-base-patch32'));
  });

  test('an image: its channels rescaled and normalized with CLIP\'s mean and std, as a unit vector; the id names folder, hash, file, output', async () => {
    const embedder = await load(clip);
    assert.match(embedder.modelId, /^clip-vit-base-patch32@sha256-[0-9a-f]{8}\/vision_model\/image_embeds$/);
    assert.equal(embedder.dim, 3);
    for (const rgb of Object.values(COLOURS)) {
      const vector = await embedder.embed(solid(rgb));
      assertClose(vector, unit(channelValues(rgb, CLIP_MEAN, CLIP_STD)));
    }
    const answer = await embedder.predict({ pixels: solid(COLOURS.red), box: [0, 0, 50, 40] });
    assert.equal(answer.model, embedder.modelId);
    assert.equal(answer.dim, 3);
  });

  test('text: "red" embeds as a red image does, "blue" as a blue one (cosine 1), unit length', async () => {
    const embedder = await load(clip);
    assert.ok(embedder.embedText);
    const red = await embedder.embedText('red');
    const blue = await embedder.embedText('A photo of BLUE');
    assert.ok(Math.abs(norm(red) - 1) < 1e-6);
    assert.ok(cosine(Array.from(red), Array.from(await embedder.embed(solid(COLOURS.red)))) > 0.99999);
    assert.ok(cosine(Array.from(blue), Array.from(await embedder.embed(solid(COLOURS.blue)))) > 0.99999);
    assert.ok(cosine(Array.from(red), Array.from(blue)) < 0.9);
  });

  test('the shortest edge resized, then the centre cropped: the middle third of a wide image alone', async () => {
    const embedder = await load(clip);
    const green = unit(channelValues(COLOURS.green, CLIP_MEAN, CLIP_STD));
    assert.ok(cosine(Array.from(await embedder.embed(stripes())), green) > 0.9999);
  });

  test('the quantized files by ?file=quantized, named in the id; the fp32 ones then missing is named', async () => {
    const quantized = writeClip(folder('clip-quantized-only'), { quantized: true, fp32: false });
    const embedder = await load(quantized, parseHfModelEntry(`${quantized}?file=quantized`).options);
    assert.match(embedder.modelId, /^clip-quantized-only@sha256-[0-9a-f]{8}\/vision_model_quantized\/image_embeds$/);
    assert.ok(cosine(Array.from(await embedder.embedText!('green')), Array.from(await embedder.embed(solid(COLOURS.green)))) > 0.99999);
    await assert.rejects(load(quantized), {
      message: `${quantized} has no onnx/vision_model.onnx (the CLIP image tower, file=fp32); its ONNX files: onnx/text_model_quantized.onnx, onnx/vision_model_quantized.onnx`,
    });
  });

  test('an image tower alone (no text files) loads without embedText', async () => {
    const embedder = await load(writeClip(folder('clip-vision-only'), { text: false }));
    assert.equal(embedder.embedText, undefined);
    assert.equal(embedder.dim, 3);
  });

  test('the id follows the bytes: a copy elsewhere keeps it, a changed ONNX file or preprocessing changes it', async () => {
    const original = (await load(clip)).modelId;
    const elsewhere = path.join(root, 'copies', 'clip-vit-base-patch32');
    cpSync(clip, elsewhere, { recursive: true });
    assert.equal((await load(elsewhere)).modelId, original);
    writeModelFolder(elsewhere, { 'onnx/vision_model.onnx': channelMeanGraph('image_embeds', 32, { dim: 3, weights: [2, 0, 0, 0, 1, 0, 0, 0, 1] }) });
    const changed = (await load(elsewhere)).modelId;
    assert.notEqual(changed, original);
    assert.match(changed, /^clip-vit-base-patch32@sha256-[0-9a-f]{8}\/vision_model\/image_embeds$/);
  });

  test('the tokenizer: special tokens added, at most 77 tokens with them (truncated before the end token), no padding', async () => {
    const files = folderModelFiles(clip);
    const tokenizer = await loadTextTokenizer(files, familyOf('clip')!, { model_type: 'clip', text_config: { max_position_embeddings: 77 } });
    const { ids, mask } = tokenizer.encode('Red blue');
    assert.deepEqual(Array.from(ids, Number), [0, 3, 5, 1]);
    assert.deepEqual(Array.from(mask, Number), [1, 1, 1, 1]);
    const long = tokenizer.encode(Array(100).fill('red').join(' '));
    assert.equal(long.ids.length, 77);
    assert.deepEqual([Number(long.ids[0]), Number(long.ids[75]), Number(long.ids[76])], [0, 3, 1]);
  });
});

describe('SigLIP and SigLIP 2 (google/siglip-base-patch16-224\'s layout)', () => {
  for (const modelType of ['siglip', 'siglip2'] as const) {
    test(`${modelType}: images and texts, pooler_output of both towers (text padded to 64: the graph takes no other length)`, async () => {
      const embedder = await load(writeSiglip(folder(`${modelType}-base-patch16-224`), { modelType }));
      assert.match(embedder.modelId, new RegExp(`^${modelType}-base-patch16-224@sha256-[0-9a-f]{8}/vision_model/pooler_output$`));
      for (const [word, rgb] of Object.entries(COLOURS)) {
        const image = await embedder.embed(solid(rgb));
        assertClose(image, unit(channelValues(rgb, HALF, HALF)));
        assert.ok(cosine(Array.from(await embedder.embedText!(word.toUpperCase())), Array.from(image)) > 0.99999, word);
      }
    });
  }

  test('resized to height/width without a crop: the whole of a wide image, stretched', async () => {
    const embedder = await load(folder('siglip-base-patch16-224'));
    // Each channel is a third of the image: (1/3 - 0.5) / 0.5 in every channel.
    assert.ok(cosine(Array.from(await embedder.embed(stripes())), unit([-1, -1, -1])) > 0.9999);
  });

  test('the tokenizer pads with </s> to max_length 64, as tokenizer_config.json says', async () => {
    const tokenizer = await loadTextTokenizer(folderModelFiles(folder('siglip-base-patch16-224')), familyOf('siglip')!, { model_type: 'siglip' });
    const { ids, mask } = tokenizer.encode('a photo of red');
    assert.equal(ids.length, 64);
    assert.deepEqual(Array.from(ids.slice(0, 6), Number), [6, 7, 8, 3, 1, 1]);
    assert.deepEqual(Array.from(mask.slice(0, 6), Number), [1, 1, 1, 1, 1, 0]);
    assert.ok(ids.slice(5).every((id) => id === 1n));
  });
});

describe('DINOv2 (image only)', () => {
  let dinov2: string;
  before(() => {
    dinov2 = writeDinov2(folder('dinov2-small'));
  });

  test('the CLS token of last_hidden_state by default; ImageNet\'s mean and std; no embedText', async () => {
    const embedder = await load(dinov2);
    assert.match(embedder.modelId, /^dinov2-small@sha256-[0-9a-f]{8}\/model\/last_hidden_state-cls$/);
    assert.equal(embedder.embedText, undefined);
    assertClose(await embedder.embed(solid(COLOURS.blue, 30, 70)), unit(channelValues(COLOURS.blue, IMAGENET_MEAN, IMAGENET_STD)));
    // shortest_edge 36, then the centre 32x32: green alone.
    assert.ok(cosine(Array.from(await embedder.embed(stripes())), unit(channelValues(COLOURS.green, IMAGENET_MEAN, IMAGENET_STD))) > 0.9999);
  });

  test('?pooling=mean averages the patch tokens instead (here the CLS token negated), and says so in the id', async () => {
    const embedder = await load(dinov2, { file: 'fp32', pooling: 'mean' });
    assert.match(embedder.modelId, /\/model\/last_hidden_state-mean$/);
    assertClose(await embedder.embed(solid(COLOURS.red)), unit(channelValues(COLOURS.red, IMAGENET_MEAN, IMAGENET_STD)).map((x) => -x), 1e-4);
  });

  test('?pooling=pooler needs pooler_output, which this export lacks', async () => {
    await assert.rejects(load(dinov2, { file: 'fp32', pooling: 'pooler' }), {
      message: `${dinov2} onnx/model.onnx has no output pooler_output (its outputs: last_hidden_state)`,
    });
  });

  test('a quantized file variant', async () => {
    const quantized = writeDinov2(folder('dinov2-small-quantized'), { quantized: true });
    const embedder = await load(quantized, { file: 'quantized' });
    assert.match(embedder.modelId, /\/model_quantized\/last_hidden_state-cls$/);
  });
});

describe('what stops loading, with its message', () => {
  test('an unsupported model_type', async () => {
    const bert = writeModelFolder(folder('bert'), { 'config.json': { model_type: 'bert' }, 'onnx/model.onnx': channelMeanGraph('pooler_output', 32) });
    await assert.rejects(load(bert), {
      message: `${bert}: model_type "bert" is not supported (supported: clip, siglip, siglip2, dinov2, dinov2_with_registers, mobilenet_v2)`,
    });
  });

  test('a missing ONNX file, config.json, preprocessor_config.json or tokenizer.json', async () => {
    const clip = writeClip(folder('clip-missing'));
    unlinkSync(path.join(clip, 'tokenizer.json'));
    await assert.rejects(load(clip), { message: `${clip} has no tokenizer.json` });
    unlinkSync(path.join(clip, 'onnx', 'text_model.onnx'));
    writeModelFolder(clip, { 'onnx/text_model_quantized.onnx': new Uint8Array() });
    await assert.rejects(load(clip), { message: `${clip} has no onnx/text_model.onnx (the CLIP text tower, file=fp32); its ONNX files: onnx/text_model_quantized.onnx, onnx/vision_model.onnx` });
    unlinkSync(path.join(clip, 'onnx', 'vision_model.onnx'));
    await assert.rejects(load(clip), { message: `${clip} has no onnx/vision_model.onnx (the CLIP image tower, file=fp32); its ONNX files: onnx/text_model_quantized.onnx` });
    unlinkSync(path.join(clip, 'preprocessor_config.json'));
    copyFileSync(path.join(folder('clip-vit-base-patch32'), 'onnx', 'vision_model.onnx'), path.join(clip, 'onnx', 'vision_model.onnx'));
    unlinkSync(path.join(clip, 'onnx', 'text_model_quantized.onnx'));
    await assert.rejects(load(clip), { message: `${clip} has no preprocessor_config.json` });
    unlinkSync(path.join(clip, 'config.json'));
    await assert.rejects(load(clip), { message: `${clip} has no config.json` });
  });

  test('a folder that does not exist', async () => {
    const nowhere = folder('nowhere');
    assert.throws(() => folderModelFiles(nowhere), { message: `model folder ${nowhere} does not exist` });
    assert.throws(() => embedModelEntries({ INFERENCE_EMBED_MODELS: `${nowhere},mobilenet-v2` }), {
      message: `INFERENCE_EMBED_MODELS must list one or more of mobilenet-v2, fused, comma-separated, each once, got "${nowhere},mobilenet-v2" (model folders and hf:owner/repo[@revision] may be listed too: "${nowhere}" is neither, model folder ${nowhere} does not exist)`,
    });
  });

  test('an image tower that takes other inputs, or another size than its preprocessing gives', async () => {
    const other = writeClip(folder('clip-other-inputs'), { text: false });
    writeModelFolder(other, { 'onnx/vision_model.onnx': tokenTableGraph('image_embeds', [[1, 0, 0]], { attentionMask: true }) });
    await assert.rejects(load(other), { message: `${other} onnx/vision_model.onnx takes input_ids, attention_mask; an image tower here takes pixel_values alone` });
    writeModelFolder(other, { 'onnx/vision_model.onnx': channelMeanGraph('image_embeds', 64) });
    await assert.rejects(load(other), { message: `${other} onnx/vision_model.onnx takes pixel_values of shape [batch_size, 3, 64, 64]; its preprocessing gives [N, 3, 32, 32]` });
  });

  test(`more than ${MAX_EMBED_DIM} dimensions`, async () => {
    const wide = writeClip(folder('clip-wide'), { text: false });
    writeModelFolder(wide, { 'onnx/vision_model.onnx': channelMeanGraph('image_embeds', 32, { dim: 2000, weights: Array.from({ length: 6000 }, (_, i) => i % 7) }) });
    await assert.rejects(load(wide), { message: `${wide} onnx/vision_model.onnx gives 2000-dimensional vectors: an index holds at most ${MAX_EMBED_DIM}` });
  });

  test('a pooling the family does not offer, a malformed option, a runtime without ONNX files', async () => {
    const clip = folder('clip-vit-base-patch32');
    await assert.rejects(load(clip, { file: 'fp32', pooling: 'cls' }), { message: `${clip}: CLIP models offer pooling pooler, not cls` });
    assert.throws(() => parseHfModelEntry(`${clip}?pooling=max`), { message: `INFERENCE_EMBED_MODELS entry "${clip}?pooling=max": pooling must be one of pooler, cls, mean, got "max"` });
    assert.throws(() => parseHfModelEntry(`${clip}?dtype=q8`), { message: `INFERENCE_EMBED_MODELS entry "${clip}?dtype=q8": unknown option "dtype" (the options are file and pooling)` });
    const tfjsLike: Runtime = { description: 'tfjs 4.22.0 wasm', load: runtime.load };
    await assert.rejects(loadHfEmbedder(tfjsLike, folderModelFiles(clip), fp32), {
      message: `${clip}: models in the Hugging Face layout run on ONNX Runtime (INFERENCE_RUNTIME=onnx), not on tfjs 4.22.0 wasm`,
    });
  });

  test('NaFlex preprocessing (SigLIP 2 at the image\'s aspect ratio), box resampling, no fixed size', () => {
    const siglip = familyOf('siglip2')!.image;
    assert.throws(() => imageProcessingOf({ max_num_patches: 256 }, siglip, 'here'), /NaFlex preprocessing .* is not supported/);
    assert.throws(() => imageProcessingOf({ size: 224, resample: 4 }, siglip, 'here'), { message: 'here: preprocessor_config.json resample 4 (box) is not supported (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic are)' });
    assert.throws(() => imageProcessingOf({ size: { shortest_edge: 224 } }, siglip, 'here'), /gives no fixed input size/);
  });
});

describe('preprocessing settings', () => {
  test('a bare number as size: a square for SigLIP, the shortest edge for CLIP; defaults where the config is silent', () => {
    assert.deepEqual(imageProcessingOf({ size: 224 }, familyOf('siglip')!.image, 'here'), {
      kernel: 'cubic',
      size: { height: 224, width: 224 },
      resize: { height: 224, width: 224 },
      rescale: 1 / 255,
      normalize: { mean: HALF, std: HALF },
    });
    assert.deepEqual(imageProcessingOf({ size: 224, crop_size: 224, do_center_crop: true, do_rescale: false, do_normalize: false, resample: 1 }, familyOf('clip')!.image, 'here'), {
      kernel: 'lanczos3',
      size: { height: 224, width: 224 },
      resize: { shortestEdge: 224 },
      crop: { height: 224, width: 224 },
    });
  });

  test('shortest-edge sizes as transformers computes them (truncated; capped by longest_edge)', () => {
    assert.deepEqual(shortestEdgeSize(640, 480, 224), { width: 298, height: 224 });
    assert.deepEqual(shortestEdgeSize(480, 640, 224), { width: 224, height: 298 });
    assert.deepEqual(shortestEdgeSize(2000, 100, 256, 1333), { width: 1333, height: 66 });
  });

  test('a crop larger than the resized image is padded with black, centred', async () => {
    const dinov2 = writeDinov2(folder('dinov2-padded'));
    writeModelFolder(dinov2, {
      'preprocessor_config.json': { do_resize: true, size: { height: 16, width: 32 }, do_center_crop: true, crop_size: { height: 32, width: 32 }, image_mean: [0, 0, 0], image_std: [1, 1, 1] },
    });
    const embedder = await load(dinov2);
    // Half the crop is the white image (1 after rescaling), half black (0): the CLS mean is 0.5 in each channel.
    assertClose(await embedder.embed(solid([255, 255, 255])), unit([1, 1, 1]));
  });
});

describe('the registry', () => {
  test('INFERENCE_EMBED_MODELS=<folder>,mobilenet-v2 loads both, the folder\'s model the default', async () => {
    const clip = folder('clip-vit-base-patch32');
    const relative = path.relative(process.cwd(), clip);
    const modelSet = modelSetFromEnv({ INFERENCE_EMBED_MODELS: `${relative}?file=fp32,mobilenet-v2`, INFERENCE_DETECTOR: 'none', INFERENCE_POSE: 'none' });
    assert.deepEqual(modelSet.embedders, [
      { kind: 'hf-layout', entry: `${relative}?file=fp32`, location: { kind: 'folder', path: clip }, options: { file: 'fp32' } },
      { kind: 'built-in', name: 'mobilenet-v2' },
    ]);
    const models = await loadModels(runtime, modelSet);
    const clipId = (await load(clip)).modelId;
    assert.deepEqual(models.embed.ids, [clipId, MOBILENET_V2_EMBEDDER.modelId]);
    const embedder = models.embed.select(undefined);
    assert.equal(embedder.modelId, clipId);
    // Through the registry's batching: concurrent embeddings share runs and get the vectors single ones get.
    const colours = [COLOURS.red, COLOURS.green, COLOURS.blue, COLOURS.red];
    const together = await Promise.all(colours.map((rgb) => embedder.embed(solid(rgb))));
    colours.forEach((rgb, i) => assertClose(together[i]!, unit(channelValues(rgb, CLIP_MEAN, CLIP_STD))));
    assert.ok(cosine(Array.from(await embedder.embedText!('red')), Array.from(together[0]!)) > 0.99999);
    assert.equal(models.embed.select(MOBILENET_V2_EMBEDDER.modelId).dim, 448);
  });

  test('the same model twice is refused; an hf: entry is parsed with its options, a malformed one refused', async () => {
    const clip = folder('clip-vit-base-patch32');
    const copy = path.join(root, 'copies', 'clip-vit-base-patch32');
    rmSync(copy, { recursive: true, force: true });
    cpSync(clip, copy, { recursive: true });
    const twice = modelSetFromEnv({ INFERENCE_EMBED_MODELS: `${clip},${copy}`, INFERENCE_DETECTOR: 'none', INFERENCE_POSE: 'none' });
    await assert.rejects(loadModels(runtime, twice), /INFERENCE_EMBED_MODELS lists the model clip-vit-base-patch32@sha256-[0-9a-f]{8}\/vision_model\/image_embeds twice/);
    const [hub] = embedModelEntries({ INFERENCE_EMBED_MODELS: 'hf:Xenova/clip-vit-base-patch32@main?file=quantized' });
    assert.deepEqual(hub, {
      kind: 'hf-layout',
      entry: 'hf:Xenova/clip-vit-base-patch32@main?file=quantized',
      location: { kind: 'hub', ref: 'hf:Xenova/clip-vit-base-patch32@main' },
      options: { file: 'quantized' },
    });
    assert.throws(() => embedModelEntries({ INFERENCE_EMBED_MODELS: 'hf:not-a-repo' }), /"hf:not-a-repo" is not a hub model: expected hf:<owner>\/<repo>/);
  });

  test('the service serves the folder\'s model by default (embed, and detect\'s crops), and mobilenet-v2 by its id', async () => {
    const clip = folder('clip-vit-base-patch32');
    const clipId = (await load(clip)).modelId;
    const server = await startServer({ INFERENCE_EMBED_MODELS: `${clip},mobilenet-v2`, INFERENCE_DETECTOR: 'none', INFERENCE_POSE: 'none' });
    try {
      const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { embed_models: string[] };
      assert.deepEqual(health.embed_models, [clipId, MOBILENET_V2_EMBEDDER.modelId]);
      const red = solid(COLOURS.red, 60, 40);
      const image = await png({ ...red, channels: 3 });
      const detections = JSON.stringify({ model: 'detr', objects: [{ label: 'vase', score: 0.9, box: [10, 10, 40, 30] }] });
      const { status, body } = await server.predict(image, 'embed,detect', { detections });
      assert.equal(status, 200);
      assert.deepEqual([body.embed.model, body.embed.dim], [clipId, 3]);
      assertClose(body.embed.vector, unit(channelValues(COLOURS.red, CLIP_MEAN, CLIP_STD)));
      assertClose(body.detect.objects[0]!.embedding, body.embed.vector);
      const today = await server.predict(image, 'embed', { embed_model: MOBILENET_V2_EMBEDDER.modelId });
      assert.deepEqual([today.status, today.body.embed.dim], [200, 448]);
    } finally {
      server.stop();
    }
  });

  test('the service stops before it listens on a folder that does not exist', async () => {
    const { code, output } = await runUntilExit({ INFERENCE_EMBED_MODELS: `${folder('nowhere')},mobilenet-v2` });
    assert.equal(code, 1);
    assert.doesNotMatch(output, /listening on/);
    assert.match(output, /model folder .*nowhere does not exist/);
  });
});
