import { z } from 'zod';
import type { RgbPixels } from '../../../image/decode.ts';
import type { Box } from '../../../image/view.ts';
import type { Float32Tensor, Int64Tensor, OnnxFileSession, Runtime, TensorInfo } from '../../../runtime/runtime.ts';
import { modelConfigSchema, preprocessorConfigSchema, readModelJson } from '../../embed/hf/configs.ts';
import { onnxFileName } from '../../embed/hf/entry.ts';
import type { ImageDefaults } from '../../embed/hf/families.ts';
import { hfModelId, openHfOnnxFile } from '../../embed/hf/hf-embedder.ts';
import { imageStepsOf, pixelValues, type ImageSteps } from '../../embed/hf/image-processor.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import { greyPixels } from '../../model-input.ts';
import type { Detection, Detector } from '../detector.ts';

/*
 * Closed-vocabulary detectors of the DETR family in the Hugging Face layout (config.json with `id2label`,
 * preprocessor_config.json, onnx/model.onnx as Optimum and transformers.js export them), run as Python transformers
 * runs them: its image processor's preprocessing, the model, its `post_process_object_detection` with the original
 * image's size as the target size. transformers.js 4.3.1 has one post-processing for all of them (a softmax with the
 * last class as "no object"), which is Python's for DETR and YOLOS only: conditional DETR and RT-DETR were trained
 * with a sigmoid focal loss and have no "no object" class, so Python scores them by sigmoid and a top-k over every
 * (query, class) pair, and so does this module.
 */

const PIXEL_VALUES = 'pixel_values';
const PIXEL_MASK = 'pixel_mask';
const LOGITS = 'logits';
const PRED_BOXES = 'pred_boxes';

/**
 * How the logits become scores: `softmax` over the classes, the last one "no object" and dropped, each query's best
 * remaining class (DETR, YOLOS); `sigmoid` of every (query, class) pair, the best `topK` of them (undefined: as many as
 * there are queries, RT-DETR's), so one query may report two classes (conditional DETR, RT-DETR).
 */
export type Scoring = { readonly kind: 'softmax' } | { readonly kind: 'sigmoid'; readonly topK?: number };

/** A family: its model types, its image processor's defaults (transformers' class defaults) and its scoring. */
type DetrFamily = {
  readonly name: string;
  readonly modelTypes: readonly string[];
  readonly image: ImageDefaults & {
    /** `size` when preprocessor_config.json has none. */
    readonly size: NonNullable<DetrPreprocessorConfig['size']>;
    readonly normalize: boolean;
    /**
     * A bare number as `size` is the shortest edge with this longest edge (`max_size`, else 1333: DETR's and YOLOS'
     * `__init__`); absent: a bare number is refused, as RT-DETR's `resize` refuses a shortest edge alone.
     */
    readonly numberSizeLongestEdge?: number;
  };
  readonly scoring: Scoring;
};

const IMAGENET_DEFAULT_MEAN = [0.485, 0.456, 0.406] as const;
const IMAGENET_DEFAULT_STD = [0.229, 0.224, 0.225] as const;
const BILINEAR = 2;
const DETR_SIZE = { shortest_edge: 800, longest_edge: 1333 };
const DETR_IMAGE = { mean: IMAGENET_DEFAULT_MEAN, std: IMAGENET_DEFAULT_STD, resample: BILINEAR, numberSizeIsSquare: false, size: DETR_SIZE, normalize: true, numberSizeLongestEdge: 1333 } as const;

const FAMILIES: readonly DetrFamily[] = [
  { name: 'DETR', modelTypes: ['detr'], image: { ...DETR_IMAGE, aspectRule: 'detr' }, scoring: { kind: 'softmax' } },
  /** ConditionalDetrImageProcessor is DETR's; its post-processing keeps the best 100 (query, class) pairs. */
  { name: 'Conditional DETR', modelTypes: ['conditional_detr'], image: { ...DETR_IMAGE, aspectRule: 'detr' }, scoring: { kind: 'sigmoid', topK: 100 } },
  { name: 'YOLOS', modelTypes: ['yolos'], image: { ...DETR_IMAGE, aspectRule: 'yolos' }, scoring: { kind: 'softmax' } },
  /** RTDetrImageProcessor: a 640x640 stretch, rescaled, not normalized; RT-DETR v2 uses the same processor. */
  {
    name: 'RT-DETR',
    modelTypes: ['rt_detr', 'rt_detr_v2'],
    image: { mean: IMAGENET_DEFAULT_MEAN, std: IMAGENET_DEFAULT_STD, resample: BILINEAR, numberSizeIsSquare: false, size: { height: 640, width: 640 }, normalize: false, aspectRule: 'detr' },
    scoring: { kind: 'sigmoid' },
  },
];

/** Every model_type read here, for messages (and for the registry to tell a detector folder from others). */
export const DETR_MODEL_TYPES: readonly string[] = FAMILIES.flatMap((family) => family.modelTypes);

const detrConfigSchema = modelConfigSchema.extend({
  id2label: z.record(z.string().regex(/^\d+$/, 'keys must be class indices'), z.string(), { error: 'missing: the class names (id2label)' }),
});

/** The keys DETR's processors read beside the common ones; `size` any of its forms, checked by the family's rules. */
const detrPreprocessorSchema = preprocessorConfigSchema.extend({
  max_size: z.number().int().positive().optional(),
  do_pad: z.boolean().optional(),
  pad_size: z.unknown().optional(),
});
type DetrPreprocessorConfig = z.infer<typeof detrPreprocessorSchema>;

/**
 * The family's image processor as transformers builds it from preprocessor_config.json: `size` through
 * get_size_dict (a bare number with `max_size`, or the family's default), normalize by the family's default;
 * padding a single image changes nothing (it is padded to its own size, `pixel_mask` all ones), so only a fixed
 * `pad_size` is refused.
 */
function detrImageSteps(config: DetrPreprocessorConfig, family: DetrFamily, where: string): ImageSteps {
  const fail = (why: string) => new Error(`${where}: preprocessor_config.json ${why}`);
  if (config.pad_size !== undefined && config.pad_size !== null && (config.do_pad ?? true)) throw fail('has a pad_size, which is not supported');
  const longest = family.image.numberSizeLongestEdge;
  let size: NonNullable<DetrPreprocessorConfig['size']> = config.size ?? family.image.size;
  if (typeof size === 'number') {
    if (longest === undefined) throw fail(`size ${size} is not supported by ${family.name}'s image processor (height and width, or shortest_edge and longest_edge, are)`);
    size = { shortest_edge: size, longest_edge: config.max_size ?? longest };
  } else if (size.height === undefined && (size.shortest_edge === undefined || size.longest_edge === undefined)) {
    throw fail(`size ${JSON.stringify(size)} is not supported (height and width, or shortest_edge and longest_edge, are)`);
  }
  return imageStepsOf({ ...config, size, do_normalize: config.do_normalize ?? family.image.normalize }, family.image, where);
}

/** One detection before labels: the class's index, its score and its box in the target size's pixels. */
export type ScoredBox = { readonly classIndex: number; readonly score: number; readonly box: Box };

/**
 * transformers' `post_process_object_detection` for one image: `logits` [1, Q, C], `predBoxes` [1, Q, 4] (centre x,
 * centre y, width, height, relative to the image the model saw), boxes scaled to `width` x `height` as corners.
 * Kept: score >= minScore (Python keeps score > threshold; the Detector interface's floor is inclusive).
 */
export function postProcessObjectDetection(logits: Float32Tensor, predBoxes: Float32Tensor, scoring: Scoring, width: number, height: number, minScore: number): ScoredBox[] {
  const [, queries, classes] = logits.shape as [number, number, number];
  const picks = scoring.kind === 'softmax' ? softmaxPicks(logits.data, queries, classes) : sigmoidPicks(logits.data, queries, classes, scoring.topK ?? queries);
  return picks
    .filter(({ score }) => score >= minScore)
    .map(({ query, classIndex, score }) => ({ classIndex, score, box: corners(predBoxes.data, query, width, height) }));
}

type Pick = { query: number; classIndex: number; score: number };

/** DETR's and YOLOS': each query's best class by softmax, the last class ("no object") left out of the max. */
function softmaxPicks(data: Float32Array, queries: number, classes: number): Pick[] {
  const picks: Pick[] = [];
  for (let query = 0; query < queries; query++) {
    const row = data.subarray(query * classes, (query + 1) * classes);
    const max = Math.max(...row);
    let sum = 0;
    for (const logit of row) sum += Math.exp(logit - max);
    let best = 0;
    for (let c = 1; c < classes - 1; c++) if (row[c]! > row[best]!) best = c;
    picks.push({ query, classIndex: best, score: Math.exp(row[best]! - max) / sum });
  }
  return picks;
}

/** Conditional DETR's and RT-DETR's: the `k` best sigmoids over every (query, class) pair, best first. */
function sigmoidPicks(data: Float32Array, queries: number, classes: number, k: number): Pick[] {
  const order = Array.from({ length: queries * classes }, (_, i) => i).sort((a, b) => data[b]! - data[a]! || a - b);
  return order.slice(0, Math.min(k, order.length)).map((i) => ({ query: Math.floor(i / classes), classIndex: i % classes, score: 1 / (1 + Math.exp(-data[i]!)) }));
}

/** A query's box as [x1, y1, x2, y2] in a width x height image (transformers' center_to_corners_format, scaled). */
function corners(boxes: Float32Array, query: number, width: number, height: number): Box {
  const [cx, cy, w, h] = boxes.subarray(query * 4, query * 4 + 4) as unknown as [number, number, number, number];
  return [(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height];
}

/** A DETR-family detector: one run per image, batch of one (as its processor pads a batch to its largest image). */
export class DetrDetector implements Detector {
  readonly modelId: string;
  readonly labels: readonly string[];
  readonly openVocabulary = false;
  readonly #session: OnnxFileSession;
  readonly #steps: ImageSteps;
  readonly #scoring: Scoring;
  /** The class names by index (id2label). */
  readonly #classes: readonly string[];

  constructor(modelId: string, session: OnnxFileSession, steps: ImageSteps, scoring: Scoring, classes: readonly string[]) {
    this.modelId = modelId;
    this.#session = session;
    this.#steps = steps;
    this.#scoring = scoring;
    this.#classes = classes;
    this.labels = [...new Set(classes)];
  }

  async detect(pixels: RgbPixels, minScore: number): Promise<Detection[]> {
    const { logits, predBoxes } = await this.run(pixels);
    return postProcessObjectDetection(logits, predBoxes, this.#scoring, pixels.width, pixels.height, minScore).map(({ classIndex, score, box }) => ({
      label: this.#classes[classIndex]!,
      score,
      box,
    }));
  }

  /** The raw outputs for some pixels; the class count is checked against id2label (a mismatch would mislabel). */
  async run(pixels: RgbPixels): Promise<{ logits: Float32Tensor; predBoxes: Float32Tensor }> {
    const values = await pixelValues(pixels, this.#steps);
    const feeds = new Map<string, Float32Tensor | Int64Tensor>([[PIXEL_VALUES, values]]);
    if (this.#session.inputs.some(({ name }) => name === PIXEL_MASK)) {
      // A single image is padded to its own size: every pixel is real.
      const [, , height, width] = values.shape as [number, number, number, number];
      feeds.set(PIXEL_MASK, { data: new BigInt64Array(height * width).fill(1n), shape: [1, height, width] });
    }
    const outputs = await this.#session.runNamed(feeds, [LOGITS, PRED_BOXES]);
    const logits = outputs.get(LOGITS)!;
    const predBoxes = outputs.get(PRED_BOXES)!;
    const classes = logits.shape[2]! - (this.#scoring.kind === 'softmax' ? 1 : 0);
    if (logits.shape.length !== 3 || classes !== this.#classes.length || predBoxes.shape[1] !== logits.shape[1] || predBoxes.shape[2] !== 4) {
      throw new Error(
        `${this.modelId}: logits [${logits.shape.join(', ')}] and pred_boxes [${predBoxes.shape.join(', ')}] do not fit id2label's ${this.#classes.length} classes${this.#scoring.kind === 'softmax' ? ' and a "no object" class' : ''}`,
      );
    }
    return { logits, predBoxes };
  }
}

/**
 * Loads a DETR-family detector from a model folder or hub repository: `file` picks onnx/model.onnx (`fp32`) or
 * onnx/model_<file>.onnx. A model type not handled, a missing file or `id2label`, inputs other than pixel_values
 * [and pixel_mask], or outputs without logits and pred_boxes throw, naming the file; the first run (a warm-up) checks
 * the class count.
 */
export async function loadDetrDetector(runtime: Runtime, files: ModelFiles, options: { file: string }): Promise<DetrDetector> {
  const where = files.source;
  const { value: config } = await readModelJson(files, 'config.json', detrConfigSchema);
  const family = FAMILIES.find(({ modelTypes }) => modelTypes.includes(config.model_type));
  if (!family) throw new Error(`${where}: config.json model_type "${config.model_type}" is not a detector of the DETR family (supported: ${DETR_MODEL_TYPES.join(', ')})`);
  const classes = classNames(config.id2label, where);
  const { value: preprocessor } = await readModelJson(files, 'preprocessor_config.json', detrPreprocessorSchema);
  const steps = detrImageSteps(preprocessor, family, where);

  const file = onnxFileName('model', options.file);
  if (!files.names.includes(file)) {
    const onnxFiles = files.names.filter((name) => name.startsWith('onnx/') && name.endsWith('.onnx'));
    throw new Error(`${where} has no ${file} (the ${family.name} model, file=${options.file}); its ONNX files: ${onnxFiles.join(', ') || 'none'}`);
  }
  const session = await openHfOnnxFile(runtime, files, file);
  checkInputs(session.inputs, `${where} ${file}`);
  checkOutputs(session.outputs, `${where} ${file}`);
  const detector = new DetrDetector(await hfModelId(files, file), session, steps, family.scoring, classes);
  // The first run initialises every kernel (pay for it before serving) and checks the class count.
  await detector.run(greyPixels(64));
  return detector;
}

/** id2label's names in class order; its keys must be 0..n-1, as transformers writes them. */
function classNames(id2label: Record<string, string>, where: string): string[] {
  const names: string[] = [];
  for (const [key, name] of Object.entries(id2label)) names[Number(key)] = name;
  if (names.length === 0 || names.length !== Object.keys(id2label).length) throw new Error(`${where}: config.json id2label must name classes 0 to n-1`);
  return names;
}

function checkInputs(inputs: readonly TensorInfo[], label: string): void {
  const names = inputs.map(({ name }) => name);
  const values = inputs.find(({ name }) => name === PIXEL_VALUES);
  const mask = inputs.find(({ name }) => name === PIXEL_MASK);
  if (!values || inputs.length !== (mask ? 2 : 1)) throw new Error(`${label} takes ${names.join(', ')}; a DETR-family detector takes ${PIXEL_VALUES} [and ${PIXEL_MASK}]`);
  if (values.type !== 'float32' || (values.shape.length !== 0 && values.shape.length !== 4)) throw new Error(`${label}: ${PIXEL_VALUES} is ${values.type} [${values.shape.join(', ')}], not float32 [N, 3, H, W]`);
  if (mask && mask.type !== 'int64') throw new Error(`${label}: ${PIXEL_MASK} is ${mask.type}, not int64`);
}

function checkOutputs(outputs: readonly TensorInfo[], label: string): void {
  for (const wanted of [LOGITS, PRED_BOXES]) {
    const output = outputs.find(({ name }) => name === wanted);
    if (!output) throw new Error(`${label} has no output ${wanted} (its outputs: ${outputs.map(({ name }) => name).join(', ')})`);
    if (output.type !== 'float32') throw new Error(`${label}: ${wanted} is ${output.type}; only float32 outputs are read (pick another file= variant)`);
  }
}
