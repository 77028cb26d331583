import { z } from 'zod';
import type { RgbPixels } from '../../../image/decode.ts';
import type { Box } from '../../../image/view.ts';
import type { Float32Tensor, Int64Tensor, OnnxFileSession, Runtime, TensorInfo } from '../../../runtime/runtime.ts';
import { modelConfigSchema, preprocessorConfigSchema, readModelJson } from '../../embed/hf/configs.ts';
import { onnxFileName } from '../../embed/hf/entry.ts';
import { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type ImageDefaults } from '../../embed/hf/families.ts';
import { checkFloat32, hfModelId, openHfOnnxFile } from '../../embed/hf/hf-embedder.ts';
import { imageProcessingOf, padToSquare, pixelValues, type ImageProcessing } from '../../embed/hf/image-processor.ts';
import { loadTextTokenizer, type TextTokenizer } from '../../embed/hf/text-tokenizer.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import { greyPixels } from '../../model-input.ts';
import type { Detection, Detector } from '../detector.ts';

/*
 * OWL-ViT and OWLv2 (google/owlvit-*, google/owlv2-*) as open-vocabulary detectors, run as Python transformers runs
 * them (OwlViTProcessor, Owl*ForObjectDetection, the image processors' post_process_object_detection), from the
 * layout transformers.js loads for them (Xenova/owlvit-base-patch32): one fused ONNX file, `onnx/model.onnx` (or a
 * `file=` variant), which takes the prompts' `input_ids` [Q, L] (and `attention_mask`) with one image's
 * `pixel_values` [1, 3, H, W] and gives `logits` [1, P, Q] (each patch against each prompt) and `pred_boxes`
 * [1, P, 4] (each patch's box, centre and size as fractions of the model's input). transformers.js runs
 * OWL*ForObjectDetection as an encoder-only model: that one file, no separate text and vision files. Since the text
 * tower is inside it, what is kept per vocabulary is the tokenized prompts, not their embeddings.
 */

export const OWL_MODEL_TYPES = ['owlvit', 'owlv2'] as const;
type OwlModelType = (typeof OWL_MODEL_TYPES)[number];

type OwlFamily = {
  readonly name: string;
  /** transformers' image processor defaults: a bare number as `size` is a square (get_size_dict default_to_square). */
  readonly image: ImageDefaults;
  /** OWLv2 pads to a square before resizing (its `do_pad`, default true); OWL-ViT stretches. */
  readonly pads: boolean;
};

const FAMILIES: Readonly<Record<OwlModelType, OwlFamily>> = {
  owlvit: { name: 'OWL-ViT', image: { mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD, resample: 3, numberSizeIsSquare: true }, pads: false },
  owlv2: { name: 'OWLv2', image: { mean: OPENAI_CLIP_MEAN, std: OPENAI_CLIP_STD, resample: 2, numberSizeIsSquare: true }, pads: true },
};

/**
 * OwlViTProcessor tokenizes with padding="max_length": every prompt padded to the tokenizer's length (the least of
 * tokenizer_config.json's model_max_length and config.json's text max_position_embeddings, both 16 in the exports;
 * 16 where neither says).
 */
const OWL_TEXT = { padToMaxLength: true, maxLength: 16 } as const;

/**
 * OWLv2's padding: grey 0.5 after rescaling (transformers 4.x's Owlv2ImageProcessor.pad, as the original OWLv2 code
 * pads; transformers' newer refactored image processors pass 0.0). Its resize is then bilinear in sharp, where
 * Python's is scikit-image's (a Gaussian anti-aliasing blur, then scipy's linear zoom): close, not bit-identical.
 */
const OWLV2_PAD = 0.5;

const INPUT_IDS = 'input_ids';
const ATTENTION_MASK = 'attention_mask';
const PIXEL_VALUES = 'pixel_values';
const LOGITS = 'logits';
const PRED_BOXES = 'pred_boxes';

/** Tokenized vocabularies kept, most recently used last: a deployment asks with a few fixed prompt lists. */
const VOCABULARIES_KEPT = 16;

/** Owlv2ImageProcessor's `do_pad` beside the keys every image processor has. */
const owlPreprocessorSchema = preprocessorConfigSchema.extend({ do_pad: z.boolean().optional() });

/** The prompts as the model's text inputs, [Q, L] each. */
type Queries = { readonly ids: Int64Tensor; readonly mask: Int64Tensor };

/**
 * The detections of one image from the model's raw outputs, as transformers' OwlViTImageProcessor and
 * Owlv2ImageProcessor post_process_object_detection: each patch's best prompt (the max of its logits), its score the
 * sigmoid of that logit, its box from centre and size to corners, times `scale` (the image's width and height for
 * OWL-ViT; for OWLv2 the padded square's side for both: see boxScale). Kept where the score is at least `minScore`
 * (Python keeps those above its threshold; the Detector contract is >=).
 */
export function owlDetections(logits: Float32Tensor, predBoxes: Float32Tensor, prompts: readonly string[], scale: { width: number; height: number }, minScore: number): Detection[] {
  const [, patches, queries] = logits.shape as [number, number, number];
  if (queries !== prompts.length || predBoxes.shape[1] !== patches || predBoxes.shape[2] !== 4) {
    throw new Error(`the OWL model gave logits [${logits.shape.join(', ')}] and pred_boxes [${predBoxes.shape.join(', ')}] for ${prompts.length} prompts`);
  }
  const detections: Detection[] = [];
  for (let patch = 0; patch < patches; patch++) {
    let best = 0;
    for (let query = 1; query < queries; query++) if (logits.data[patch * queries + query]! > logits.data[patch * queries + best]!) best = query;
    const score = 1 / (1 + Math.exp(-logits.data[patch * queries + best]!));
    if (!(score >= minScore)) continue;
    const at = (i: number) => predBoxes.data[patch * 4 + i]!;
    const [cx, cy, w, h] = [at(0), at(1), at(2), at(3)];
    const box: Box = [(cx - w / 2) * scale.width, (cy - h / 2) * scale.height, (cx + w / 2) * scale.width, (cy + h / 2) * scale.height];
    detections.push({ label: prompts[best]!, score, box });
  }
  return detections;
}

/**
 * What the model's box fractions are of, in the image's pixels. OWL-ViT: the image itself (stretched to the input).
 * OWLv2: the square it was padded to, so both sides scale by the longer one, as Python's Owlv2ImageProcessor does
 * (its _scale_boxes, whatever do_pad says); transformers.js 4.3.1 neither pads nor scales so (its Owlv2ImageProcessor
 * is OWL-ViT's).
 */
export function boxScale(modelType: OwlModelType, width: number, height: number): { width: number; height: number } {
  if (!FAMILIES[modelType].pads) return { width, height };
  const side = Math.max(width, height);
  return { width: side, height: side };
}

/** The image processing, with OWLv2's padding value (0-255) where it pads to a square first. */
type OwlImageProcessing = ImageProcessing & { readonly padValue?: number };

class OwlDetector implements Detector {
  readonly modelId: string;
  readonly labels: readonly string[] = [];
  readonly openVocabulary = true;
  readonly #modelType: OwlModelType;
  readonly #session: OnnxFileSession;
  readonly #image: OwlImageProcessing;
  readonly #tokenizer: TextTokenizer;
  readonly #vocabularies = new Map<string, Queries>();

  constructor(modelId: string, modelType: OwlModelType, session: OnnxFileSession, image: OwlImageProcessing, tokenizer: TextTokenizer) {
    this.modelId = modelId;
    this.#modelType = modelType;
    this.#session = session;
    this.#image = image;
    this.#tokenizer = tokenizer;
  }

  async detect(pixels: RgbPixels, minScore: number, prompts: readonly string[] = []): Promise<Detection[]> {
    if (prompts.length === 0) return [];
    const { ids, mask } = this.#queries(prompts);
    const input = this.#image.padValue === undefined ? pixels : padToSquare(pixels, this.#image.padValue);
    const feeds = new Map<string, Float32Tensor | Int64Tensor>([
      [PIXEL_VALUES, await pixelValues(input, this.#image)],
      [INPUT_IDS, ids],
    ]);
    if (this.#session.inputs.some(({ name }) => name === ATTENTION_MASK)) feeds.set(ATTENTION_MASK, mask);
    const outputs = await this.#session.runNamed(feeds, [LOGITS, PRED_BOXES]);
    return owlDetections(outputs.get(LOGITS)!, outputs.get(PRED_BOXES)!, prompts, boxScale(this.#modelType, pixels.width, pixels.height), minScore);
  }

  /** The prompts tokenized, once per vocabulary (a small LRU keyed by the prompt list). */
  #queries(prompts: readonly string[]): Queries {
    const key = JSON.stringify(prompts);
    let queries = this.#vocabularies.get(key);
    if (queries) {
      this.#vocabularies.delete(key);
    } else {
      queries = tokenizePrompts(this.#tokenizer, prompts);
      if (this.#vocabularies.size >= VOCABULARIES_KEPT) this.#vocabularies.delete(this.#vocabularies.keys().next().value!);
    }
    this.#vocabularies.set(key, queries);
    return queries;
  }
}

/** Every prompt padded to the same length (OWL_TEXT), stacked: the model's [Q, L] text inputs. */
function tokenizePrompts(tokenizer: TextTokenizer, prompts: readonly string[]): Queries {
  const encoded = prompts.map((prompt) => tokenizer.encode(prompt));
  const length = encoded[0]!.ids.length;
  const stack = (pick: (inputs: (typeof encoded)[number]) => BigInt64Array): Int64Tensor => {
    const data = new BigInt64Array(prompts.length * length);
    encoded.forEach((inputs, i) => data.set(pick(inputs), i * length));
    return { data, shape: [prompts.length, length] };
  };
  return { ids: stack(({ ids }) => ids), mask: stack(({ mask }) => mask) };
}

/** What a model folder (or hub repository) holds for an OWL detector, read and checked before its session loads. */
type OwlPlan = { readonly modelType: OwlModelType; readonly file: string; readonly image: OwlImageProcessing; readonly tokenizer: TextTokenizer };

/**
 * Reads config.json's model_type, preprocessor_config.json and the tokenizer, and picks the fused `onnx/model*.onnx`
 * the `file` option names; anything missing or unsupported throws, naming the file and the problem.
 */
async function planOwlModel(files: ModelFiles, options: { file: string }): Promise<OwlPlan> {
  const where = files.source;
  const { value: config } = await readModelJson(files, 'config.json', modelConfigSchema);
  const modelType = OWL_MODEL_TYPES.find((type) => type === config.model_type);
  if (!modelType) throw new Error(`${where}: model_type "${config.model_type}" is not an OWL detector (supported: ${OWL_MODEL_TYPES.join(', ')})`);
  const family = FAMILIES[modelType];
  const file = onnxFileName('model', options.file);
  if (!files.names.includes(file)) {
    const onnxFiles = files.names.filter((name) => name.startsWith('onnx/') && name.endsWith('.onnx'));
    throw new Error(`${where} has no ${file} (the ${family.name} detector, file=${options.file}); its ONNX files: ${onnxFiles.join(', ') || 'none'}`);
  }
  const { value: preprocessor } = await readModelJson(files, 'preprocessor_config.json', owlPreprocessorSchema);
  const processing = imageProcessingOf(preprocessor, family.image, where);
  const image = family.pads && (preprocessor.do_pad ?? true) ? { ...processing, padValue: padValueOf(processing) } : processing;
  const tokenizer = await loadTextTokenizer(files, { name: family.name, text: OWL_TEXT }, config);
  return { modelType, file, image, tokenizer };
}

/**
 * Fetches every file the detector reads (a hub model's into the cache, once), so that a model that cannot be had
 * stops the service before it listens, as fetchHfModel does for embedders.
 */
export async function fetchOwlModel(files: ModelFiles, options: { file: string }): Promise<void> {
  const { file } = await planOwlModel(files, options);
  for (const name of [file, `${file}_data`].filter((name) => files.names.includes(name))) await files.localPath(name);
}

/**
 * Loads an OWL-ViT or OWLv2 export in the Hugging Face layout on a runtime that reads ONNX files (planOwlModel's
 * files), checks its inputs and outputs against the export's names, and warms it.
 */
export async function loadOwlDetector(runtime: Runtime, files: ModelFiles, options: { file: string }): Promise<Detector> {
  const where = files.source;
  const { modelType, file, image, tokenizer } = await planOwlModel(files, options);
  const label = `${where} ${file}`;
  const session = await openHfOnnxFile(runtime, files, file, [LOGITS, PRED_BOXES]);
  checkInputs(session.inputs, image, label);
  for (const output of [LOGITS, PRED_BOXES]) checkOutput(session.outputs.find((info) => info.name === output)!, label);

  const modelId = await hfModelId(files, file, 'detect', ['tokenizer.json', 'tokenizer_config.json']);
  const detector = new OwlDetector(modelId, modelType, session, image, tokenizer);
  // The first run initialises every kernel: paid for before serving.
  await detector.detect(greyPixels(image.size.width), 1, ['a photo']);
  return detector;
}

/** Grey 0.5 after rescaling, in the 0-255 values padToSquare writes before the (linear) resize and rescale. */
function padValueOf(processing: ImageProcessing): number {
  return Math.min(255, Math.round(OWLV2_PAD / (processing.rescale ?? 1)));
}

/** pixel_values float32 [N, 3, H, W] at the preprocessed size; input_ids and any attention_mask int64; nothing else. */
function checkInputs(inputs: readonly TensorInfo[], image: ImageProcessing, label: string): void {
  const names = inputs.map(({ name }) => name);
  const allowed = [INPUT_IDS, ATTENTION_MASK, PIXEL_VALUES];
  if (!names.includes(INPUT_IDS) || !names.includes(PIXEL_VALUES) || names.some((name) => !allowed.includes(name))) {
    throw new Error(`${label} takes ${names.join(', ')}; an OWL detector takes ${INPUT_IDS}, ${PIXEL_VALUES} and optionally ${ATTENTION_MASK}`);
  }
  for (const input of inputs) {
    if (input.name === PIXEL_VALUES) checkFloat32(input, label);
    else if (input.type !== 'int64') throw new Error(`${label}: ${input.name} is ${input.type}; token inputs are fed as int64`);
  }
  const pixels = inputs.find(({ name }) => name === PIXEL_VALUES)!;
  const [, channels, height, width] = pixels.shape;
  const fits = (dim: number | string | undefined, wanted: number) => typeof dim !== 'number' || dim === wanted;
  if (pixels.shape.length > 0 && (pixels.shape.length !== 4 || !fits(channels, 3) || !fits(height, image.size.height) || !fits(width, image.size.width))) {
    throw new Error(`${label} takes ${PIXEL_VALUES} of shape [${pixels.shape.join(', ')}]; its preprocessing gives [1, 3, ${image.size.height}, ${image.size.width}]`);
  }
}

/** logits [N, P, Q] and pred_boxes [N, P, 4], float32 (a shape the file leaves unknown is checked by the first run). */
function checkOutput(output: TensorInfo, label: string): void {
  checkFloat32(output, label);
  const last = output.shape[2];
  if (output.shape.length > 0 && (output.shape.length !== 3 || (output.name === PRED_BOXES && typeof last === 'number' && last !== 4))) {
    throw new Error(`${label}: ${output.name} is of shape [${output.shape.join(', ')}], not [N, patches, ${output.name === LOGITS ? 'prompts' : '4'}]`);
  }
}
