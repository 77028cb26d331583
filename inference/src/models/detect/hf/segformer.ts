import { z } from 'zod';
import type { RgbPixels } from '../../../image/decode.ts';
import type { OnnxFileSession, Runtime, TensorInfo } from '../../../runtime/runtime.ts';
import { preprocessorConfigSchema, readModelJson } from '../../embed/hf/configs.ts';
import { onnxFileName } from '../../embed/hf/entry.ts';
import type { ImageDefaults } from '../../embed/hf/families.ts';
import { checkFloat32, checkVisionInput, hfModelId, openHfOnnxFile } from '../../embed/hf/hf-embedder.ts';
import { imageProcessingOf, pixelValues, type ImageProcessing } from '../../embed/hf/image-processor.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import { greyPixels } from '../../model-input.ts';
import type { Detection, GarmentParser } from '../detector.ts';
import { semanticRegions, semanticSegmentation } from './semantic-regions.ts';

/*
 * A clothes parser in the Hugging Face layout: a semantic segmenter (SegFormer trained on clothes, as
 * Xenova/segformer_b2_clothes exports mattmdjaga/segformer_b2_clothes, or the FASHN human parser) run as Python
 * transformers runs it, its class map cut into connected regions that become detections.
 *
 *   config.json               model_type `segformer`, id2label (the classes, background included)
 *   preprocessor_config.json  SegformerImageProcessor's keys (a stretch to size, rescale, normalize)
 *   onnx/model.onnx           pixel_values [N, 3, H, W] -> logits [N, C, H/4, W/4] (or onnx/model_<file>.onnx)
 */

/** The model_types read: each one's image processor is SegformerImageProcessor. */
export const PARSER_MODEL_TYPES = ['segformer'] as const;

/**
 * SegformerImageProcessor's defaults: a 512x512 stretch, bilinear, ImageNet's mean and std; a bare number as `size`
 * is a square (its `get_size_dict` defaults to square).
 */
const SEGFORMER_IMAGE: ImageDefaults = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], resample: 2, numberSizeIsSquare: true };
const SEGFORMER_SIZE = { height: 512, width: 512 };

const LOGITS = 'logits';
/** The ONNX file's name in onnx/, without the variant suffix (transformers.js' layout for SegFormer). */
const MODEL_FILE = 'model';
/**
 * Names the post-processing in the model id: upsample and argmax, 8-connected regions, MIN_REGION_FRACTION, the
 * mean-probability score. A change to any of them is a new version.
 */
const READOUT = `${LOGITS}-regions8-v1`;

/**
 * Regions under this fraction of the parsed pixels are dropped: the specks the argmax leaves along class borders
 * (one logit cell of a 512x512 input is 1/16384 of the picture, a few of them stay under 1/1000), while sunglasses
 * or a shoe on a person's crop (a few thousandths of it) stay.
 */
export const MIN_REGION_FRACTION = 0.001;

/** The classes that are no garment nor part of a person: the segmenter's `background` (any case), if it has one. */
const isBackground = (label: string) => label.toLowerCase() === 'background';

/** config.json as the parser reads it. */
const segmenterConfigSchema = z.object({
  model_type: z.string({ error: 'missing or not a string: the family of the model' }),
  id2label: z.record(z.string(), z.string(), { error: 'missing or not an object of class index -> name: a segmenter names its classes there' }),
});

/** A loaded parser: one run of the segmenter per parse, then its regions. */
class SegformerParser implements GarmentParser {
  readonly modelId: string;
  readonly labels: readonly string[];
  readonly #session: OnnxFileSession;
  readonly #image: ImageProcessing;
  readonly #counts: (classIndex: number) => boolean;

  constructor(modelId: string, labels: readonly string[], session: OnnxFileSession, image: ImageProcessing) {
    this.modelId = modelId;
    this.labels = labels;
    this.#session = session;
    this.#image = image;
    this.#counts = (classIndex) => !isBackground(labels[classIndex]!);
  }

  /** Each non-background class's regions of at least MIN_REGION_FRACTION of the pixels, boxes in their coordinates. */
  async parse(pixels: RgbPixels, minScore: number): Promise<Detection[]> {
    const outputs = await this.#session.run(await pixelValues(pixels, this.#image), [LOGITS]);
    const logits = outputs.get(LOGITS)!;
    if (logits.shape[1] !== this.labels.length) {
      throw new Error(`${this.modelId}: ${LOGITS} has ${logits.shape[1]} classes, id2label ${this.labels.length}`);
    }
    const map = semanticSegmentation(logits, pixels.width, pixels.height);
    const minArea = MIN_REGION_FRACTION * pixels.width * pixels.height;
    return semanticRegions(map, this.#counts, minArea)
      .filter((region) => region.score >= minScore)
      .map((region) => ({ label: this.labels[region.classIndex]!, score: region.score, box: region.box }));
  }
}

/**
 * Loads a clothes parser from a model in the Hugging Face layout on a runtime that reads ONNX files, and warms it.
 * Refused, naming the file and the problem: a model_type not in PARSER_MODEL_TYPES, config.json without id2label (or
 * with indices other than 0..C-1, or a name twice), preprocessing without a fixed size, a missing ONNX file, inputs
 * other than pixel_values at the preprocessed size, no float32 `logits` [N, C, h, w] with C the id2label's classes.
 */
export async function loadSegformerParser(runtime: Runtime, files: ModelFiles, options: { file: string }): Promise<GarmentParser> {
  const where = files.source;
  const { value: config } = await readModelJson(files, 'config.json', segmenterConfigSchema);
  if (!(PARSER_MODEL_TYPES as readonly string[]).includes(config.model_type)) {
    throw new Error(`${where}: model_type "${config.model_type}" is not supported for a clothes parser (supported: ${PARSER_MODEL_TYPES.join(', ')})`);
  }
  const labels = labelsOf(config.id2label, where);
  const image = await segformerProcessing(files);
  const file = onnxFileName(MODEL_FILE, options.file);
  if (!files.names.includes(file)) {
    const onnxFiles = files.names.filter((name) => name.startsWith('onnx/') && name.endsWith('.onnx'));
    throw new Error(`${where} has no ${file} (the segmenter, file=${options.file}); its ONNX files: ${onnxFiles.join(', ') || 'none'}`);
  }
  const session = await openHfOnnxFile(runtime, files, file);
  const label = `${where} ${file}`;
  checkVisionInput(session.inputs, image, label);
  checkLogits(session.outputs, labels.length, label);
  const parser = new SegformerParser(await hfModelId(files, file, READOUT), labels, session, image);
  // The first run initialises every kernel (paid before serving) and checks the logits' classes where the file
  // leaves them free.
  await parser.parse(greyPixels(image.size.width), 1);
  return parser;
}

/** id2label as a list: keys 0..C-1, each name once (a label map's keys must name one class). */
function labelsOf(id2label: Record<string, string>, where: string): string[] {
  const fail = (why: string) => new Error(`${where}: config.json id2label ${why}`);
  const entries = Object.entries(id2label);
  if (entries.length < 2) throw fail('names fewer than two classes');
  const labels: string[] = [];
  for (const [key, name] of entries) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= entries.length || String(index) !== key) {
      throw fail(`has the key "${key}": the keys must be the class indices 0 to ${entries.length - 1}`);
    }
    labels[index] = name;
  }
  const twice = labels.find((name, index) => labels.indexOf(name) !== index);
  if (twice !== undefined) throw fail(`names "${twice}" twice`);
  return labels;
}

/**
 * preprocessor_config.json read as SegformerImageProcessor reads it: its size default (512x512) where the file has
 * none, and no centre crop (the processor has none, whatever the file says).
 */
async function segformerProcessing(files: ModelFiles): Promise<ImageProcessing> {
  const { value: preprocessor } = await readModelJson(files, 'preprocessor_config.json', preprocessorConfigSchema);
  return imageProcessingOf({ ...preprocessor, size: preprocessor.size ?? SEGFORMER_SIZE, do_center_crop: false }, SEGFORMER_IMAGE, files.source);
}

/** The file gives float32 `logits` [N, C, h, w] with C the id2label's classes (where the file fixes those). */
function checkLogits(outputs: readonly TensorInfo[], classes: number, label: string): void {
  const logits = outputs.find(({ name }) => name === LOGITS);
  if (!logits) throw new Error(`${label} has no output ${LOGITS} (its outputs: ${outputs.map(({ name }) => name).join(', ')})`);
  checkFloat32(logits, label);
  const { shape } = logits;
  if (shape.length !== 0 && (shape.length !== 4 || (typeof shape[1] === 'number' && shape[1] !== classes))) {
    throw new Error(`${label}: ${LOGITS} is of shape [${shape.join(', ')}], not [N, ${classes}, h, w] (${classes} classes in id2label)`);
  }
}
