import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { MAX_EMBED_MODEL_ID } from '@edge-image-search/contract/wire';
import type { RgbPixels } from '../../../image/decode.ts';
import type { ImageView } from '../../../image/view.ts';
import type { Float32Tensor, OnnxFileSession, Runtime, TensorInfo } from '../../../runtime/runtime.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import { greyPixels } from '../../model-input.ts';
import type { EmbedResult, Embedder } from '../embedder.ts';
import { l2Normalize } from '../vector.ts';
import { modelConfigSchema, preprocessorConfigSchema, readModelJson, type ModelConfig } from './configs.ts';
import { onnxFileName, type HfModelOptions, type Pooling } from './entry.ts';
import { familyOf, MODEL_TYPES, type Family } from './families.ts';
import { imageProcessingOf, pixelValues, type ImageProcessing } from './image-processor.ts';
import { loadTextTokenizer, type TextTokenizer } from './text-tokenizer.ts';

/*
 * An embedder of a model in the Hugging Face layout (families.ts): its image tower's ONNX file run through the
 * service's runtime (so batched and scheduled like the built-in embedders' networks: models/registry.ts), on the
 * whole image preprocessed as its preprocessor_config.json says; the text tower, where the family has one and the
 * model ships it, for `embedText`.
 */

/** Vectorize's limit: a model with longer vectors stops the service. */
export const MAX_EMBED_DIM = 1536;

/** The inputs a text tower may take; each is fed from the tokenizer's output. */
const TEXT_INPUTS = ['input_ids', 'attention_mask', 'token_type_ids', 'position_ids'] as const;
const PIXEL_VALUES = 'pixel_values';

/** What a model folder (or hub repository) holds for an embedder, read and checked before any session is loaded. */
export type HfModelPlan = {
  readonly family: Family;
  readonly config: ModelConfig;
  readonly image: ImageProcessing;
  /** The image tower: its file, the pooling asked (undefined: the family's default, chosen once the file is open). */
  readonly vision: { readonly file: string; readonly pooling: Pooling | undefined };
  /** The text tower's file, where the family reads text and the model ships that tower. */
  readonly textFile: string | undefined;
};

/**
 * Reads config.json and preprocessor_config.json, picks the family and the files the options name; anything missing
 * or unsupported throws, naming it. The model id is settled once the image tower is open (its default pooling
 * depends on its outputs): see loadHfEmbedder.
 */
export async function planHfModel(files: ModelFiles, options: HfModelOptions): Promise<HfModelPlan> {
  const where = files.source;
  const { value: config } = await readModelJson(files, 'config.json', modelConfigSchema);
  const family = familyOf(config.model_type);
  if (!family) throw new Error(`${where}: model_type "${config.model_type}" is not supported (supported: ${MODEL_TYPES.join(', ')})`);
  if (options.pooling && !family.vision.poolings.includes(options.pooling)) {
    throw new Error(`${where}: ${family.name} models offer pooling ${family.vision.poolings.join(', ')}, not ${options.pooling}`);
  }
  const onnxFiles = files.names.filter((name) => name.startsWith('onnx/') && name.endsWith('.onnx'));
  const needFile = (tower: string): string => {
    const name = onnxFileName(tower, options.file);
    if (!files.names.includes(name)) {
      throw new Error(`${where} has no ${name} (the ${family.name} image tower, file=${options.file}); its ONNX files: ${onnxFiles.join(', ') || 'none'}`);
    }
    return name;
  };
  const visionFile = needFile(family.vision.file);
  let textFile: string | undefined;
  if (family.text && onnxFiles.some((name) => name.startsWith(`onnx/${family.text!.file}`))) {
    textFile = onnxFileName(family.text.file, options.file);
    if (!files.names.includes(textFile)) {
      throw new Error(`${where} has no ${textFile} (the ${family.name} text tower, file=${options.file}); its ONNX files: ${onnxFiles.join(', ')}`);
    }
  }
  const { value: preprocessor } = await readModelJson(files, 'preprocessor_config.json', preprocessorConfigSchema);
  const image = imageProcessingOf(preprocessor, family.image, where);
  return { family, config, image, vision: { file: visionFile, pooling: options.pooling }, textFile };
}

/**
 * The model id: the folder's name and a hash of what makes its answers (the image tower's ONNX file, its external
 * data if any, config.json, preprocessor_config.json, and `alsoHashed`: other files its outputs depend on, a
 * detector's tokenizer), or the hub source (`hf:owner/repo@commit`, which pins them); the image tower's file; the
 * output and pooling where the model has a choice. E.g. `clip-vit-base-patch32@sha256-1a2b3c4d/vision_model_quantized/image_embeds`,
 * a detector's `detr-resnet-50@sha256-5e6f7a8b/model`.
 */
export async function hfModelId(files: ModelFiles, visionFile: string, output?: string, alsoHashed: readonly string[] = []): Promise<string> {
  let sourcePart: string;
  if (files.source.startsWith('hf:')) {
    sourcePart = files.source;
  } else {
    const hash = createHash('sha256');
    // config.json too: its model_type picks preprocessing defaults, and its register tokens what `mean` averages.
    for (const name of [visionFile, `${visionFile}_data`, 'config.json', 'preprocessor_config.json', ...alsoHashed].filter((name) => files.names.includes(name))) {
      for await (const chunk of createReadStream(await files.localPath(name))) hash.update(chunk as Buffer);
    }
    sourcePart = `${path.basename(files.source)}@sha256-${hash.digest('hex').slice(0, 8)}`;
  }
  const id = [sourcePart, path.posix.basename(visionFile, '.onnx'), ...(output === undefined ? [] : [output])].join('/');
  if (id.length > MAX_EMBED_MODEL_ID) throw new Error(`${files.source}: the model id ${id} is longer than ${MAX_EMBED_MODEL_ID} characters (shorten the folder's name)`);
  return id;
}

/** How the image tower's output becomes a vector: the output read and the pooling of it. */
type VisionReadout = { readonly output: string; readonly pooling: Pooling; readonly prefixTokens: number };

/** An embedder of a model in the Hugging Face layout: whole-image views only. */
export class HfEmbedder implements Embedder {
  readonly task = 'embed';
  readonly modelId: string;
  readonly dim: number;
  readonly embedText?: (text: string) => Promise<Float32Array>;
  readonly #vision: OnnxFileSession;
  readonly #image: ImageProcessing;
  readonly #readout: VisionReadout;

  constructor(
    modelId: string,
    dim: number,
    vision: { session: OnnxFileSession; image: ImageProcessing; readout: VisionReadout },
    text?: TextTower,
  ) {
    this.modelId = modelId;
    this.dim = dim;
    this.#vision = vision.session;
    this.#image = vision.image;
    this.#readout = vision.readout;
    if (text) this.embedText = (input) => embedText(text, input, this.dim);
  }

  async predict(view: ImageView): Promise<EmbedResult> {
    const vector = await this.embed(view.pixels);
    return { model: this.modelId, dim: vector.length, vector: Array.from(vector) };
  }

  /** The unit-length embedding of some pixels (a whole image or a crop of one): one run of the image tower. */
  async embed(pixels: RgbPixels): Promise<Float32Array> {
    const { output } = this.#readout;
    const outputs = await this.#vision.run(await pixelValues(pixels, this.#image), [output]);
    return l2Normalize(pool(outputs.get(output)!, this.#readout));
  }
}

/**
 * A loaded text tower. `attendsPadding`: every position is attended, the padding too, as transformers runs SigLIP
 * (its processor gives no attention mask, and its pooled token is the last position, a pad token).
 */
type TextTower = { session: OnnxFileSession; tokenizer: TextTokenizer; output: string; attendsPadding: boolean };

async function embedText(text: TextTower, input: string, dim: number): Promise<Float32Array> {
  const { ids, mask } = text.tokenizer.encode(input);
  const shape = [1, ids.length];
  const feeds = new Map<string, { data: BigInt64Array; shape: number[] }>();
  for (const { name } of text.session.inputs) {
    if (name === 'input_ids') feeds.set(name, { data: ids, shape });
    else if (name === 'attention_mask') feeds.set(name, { data: text.attendsPadding ? new BigInt64Array(ids.length).fill(1n) : mask, shape });
    else if (name === 'token_type_ids') feeds.set(name, { data: new BigInt64Array(ids.length), shape });
    else if (name === 'position_ids') feeds.set(name, { data: BigInt64Array.from(ids, (_, i) => BigInt(i)), shape });
  }
  const outputs = await text.session.runNamed(feeds, [text.output]);
  const vector = l2Normalize(outputs.get(text.output)!.data);
  if (vector.length !== dim) throw new Error(`the text tower gave ${vector.length} dimensions, the image tower ${dim}`);
  return vector;
}

/** A batch-of-one output as a vector: the pooled row, the first token, or the mean of the patch tokens / positions. */
function pool(tensor: Float32Tensor, { pooling, prefixTokens }: VisionReadout): Float64Array {
  const { data, shape } = tensor;
  if (pooling === 'pooler') return Float64Array.from(data);
  if (shape.length === 3) {
    const [, tokens, width] = shape as [number, number, number];
    if (pooling === 'cls') return Float64Array.from(data.subarray(0, width));
    const mean = new Float64Array(width);
    for (let token = prefixTokens; token < tokens; token++) for (let i = 0; i < width; i++) mean[i]! += data[token * width + i]!;
    return mean.map((sum) => sum / Math.max(1, tokens - prefixTokens));
  }
  // [1, C, H, W]: each channel's mean over the positions.
  const [, channels, height, width] = shape as [number, number, number, number];
  const positions = height * width;
  const mean = new Float64Array(channels);
  for (let channel = 0; channel < channels; channel++) {
    let sum = 0;
    for (let i = 0; i < positions; i++) sum += data[channel * positions + i]!;
    mean[channel] = sum / positions;
  }
  return mean;
}

/**
 * Fetches every file the model reads (a hub model's into the cache, once), so that a model that cannot be had stops
 * the service before it listens; loading then reads them from disk.
 */
export async function fetchHfModel(files: ModelFiles, options: HfModelOptions): Promise<void> {
  const plan = await planHfModel(files, options);
  const towers = plan.textFile ? [plan.vision.file, plan.textFile] : [plan.vision.file];
  for (const name of towers.flatMap((tower) => [tower, `${tower}_data`]).filter((name) => files.names.includes(name))) await files.localPath(name);
  if (plan.textFile) await loadTextTokenizer(files, plan.family, plan.config);
}

/**
 * Loads a model in the Hugging Face layout on a runtime that reads ONNX files (a scheduled one in the service:
 * models/registry.ts), checks its towers' inputs and outputs against its family, warms it and checks its length.
 */
export async function loadHfEmbedder(runtime: Runtime, files: ModelFiles, options: HfModelOptions): Promise<HfEmbedder> {
  const where = files.source;
  const plan = await planHfModel(files, options);
  const { family } = plan;
  const open = (name: string) => openHfOnnxFile(runtime, files, name);

  const vision = await open(plan.vision.file);
  const label = `${where} ${plan.vision.file}`;
  checkVisionInput(vision.inputs, plan.image, label);
  const readout = visionReadout(family, plan.vision.pooling, vision.outputs, plan.config, label);
  const modelId = await hfModelId(files, plan.vision.file, readout.pooling === 'pooler' ? readout.output : `${readout.output}-${readout.pooling}`);
  const declared = declaredDim(vision.outputs.find(({ name }) => name === readout.output)!, readout);
  if (declared !== undefined) checkDim(declared, label);

  let text: TextTower | undefined;
  if (plan.textFile) {
    const tokenizer = await loadTextTokenizer(files, family, plan.config);
    const textLabel = `${where} ${plan.textFile}`;
    const session = await open(plan.textFile);
    const output = session.outputs.find(({ name }) => name === family.text!.output);
    if (!output) throw new Error(`${textLabel} has no output ${family.text!.output} (its outputs: ${session.outputs.map(({ name }) => name).join(', ')})`);
    checkFloat32(output, textLabel);
    checkTextInputs(session.inputs, textLabel);
    text = { session, tokenizer, output: output.name, attendsPadding: family.text!.padToMaxLength };
  }

  // The first run initialises every kernel (pay for it before serving) and tells the length where the file leaves
  // it free.
  const probe = new HfEmbedder(modelId, 0, { session: vision, image: plan.image, readout });
  const dim = (await probe.embed(greyPixels(plan.image.size.width))).length;
  checkDim(dim, label);
  const embedder = new HfEmbedder(modelId, dim, { session: vision, image: plan.image, readout }, text);
  if (embedder.embedText) await embedder.embedText('a photo');
  return embedder;
}

/** Opens one of a model's ONNX files on a runtime that reads them; `outputs`: those the session may be asked for. */
export async function openHfOnnxFile(runtime: Runtime, files: ModelFiles, name: string, outputs?: readonly string[]): Promise<OnnxFileSession> {
  if (!runtime.loadOnnxFile) {
    throw new Error(`${files.source}: models in the Hugging Face layout run on ONNX Runtime (INFERENCE_RUNTIME=onnx), not on ${runtime.description}`);
  }
  // External data (a file over 2 GB) is fetched beside the graph first: ONNX Runtime reads it from there.
  if (files.names.includes(`${name}_data`)) await files.localPath(`${name}_data`);
  return runtime.loadOnnxFile({ format: 'onnx-file', file: await files.localPath(name), name: `${files.source} ${name}`, ...(outputs && { outputs }) });
}

function checkDim(dim: number, label: string): void {
  if (dim > MAX_EMBED_DIM) throw new Error(`${label} gives ${dim}-dimensional vectors: an index holds at most ${MAX_EMBED_DIM}`);
  if (dim < 1) throw new Error(`${label} gives empty vectors`);
}

export function checkFloat32(info: TensorInfo, label: string): void {
  if (info.type !== 'float32') throw new Error(`${label}: ${info.name} is ${info.type}; only float32 inputs and outputs are read (pick another file= variant)`);
}

/** The image tower takes `pixel_values` alone, float32 [N, 3, H, W], at the preprocessed size where it fixes one. */
export function checkVisionInput(inputs: readonly TensorInfo[], image: ImageProcessing, label: string): void {
  const input = inputs.find(({ name }) => name === PIXEL_VALUES);
  if (!input || inputs.length !== 1) {
    throw new Error(`${label} takes ${inputs.map(({ name }) => name).join(', ')}; an image tower here takes ${PIXEL_VALUES} alone`);
  }
  checkFloat32(input, label);
  // A shape the file leaves unknown ([]) is checked by the first run instead.
  const [, channels, height, width] = input.shape;
  const fixed = (dim: number | string | undefined, wanted: number) => typeof dim !== 'number' || dim === wanted;
  const known = input.shape.length > 0;
  if (known && (input.shape.length !== 4 || !fixed(channels, 3) || !fixed(height, image.size.height) || !fixed(width, image.size.width))) {
    throw new Error(`${label} takes ${PIXEL_VALUES} of shape [${input.shape.join(', ')}]; its preprocessing gives [N, 3, ${image.size.height}, ${image.size.width}]`);
  }
}

function checkTextInputs(inputs: readonly TensorInfo[], label: string): void {
  const unknown = inputs.filter(({ name }) => !(TEXT_INPUTS as readonly string[]).includes(name));
  if (unknown.length > 0 || !inputs.some(({ name }) => name === 'input_ids')) {
    throw new Error(`${label} takes ${inputs.map(({ name }) => name).join(', ')}; a text tower here takes input_ids and any of ${TEXT_INPUTS.slice(1).join(', ')}`);
  }
  for (const input of inputs) if (input.type !== 'int64') throw new Error(`${label}: ${input.name} is ${input.type}; token inputs are fed as int64`);
}

/** The pooling asked, or the family's default: its first pooling whose output the file has. */
function visionReadout(family: Family, asked: Pooling | undefined, outputs: readonly TensorInfo[], config: ModelConfig, label: string): VisionReadout {
  const outputOf = (pooling: Pooling): string | undefined => (pooling === 'pooler' ? family.vision.pooled : family.vision.tokens);
  const has = (name: string | undefined) => name !== undefined && outputs.some((output) => output.name === name);
  const pooling = asked ?? family.vision.poolings.find((candidate) => has(outputOf(candidate)));
  const wanted = outputOf(pooling ?? family.vision.poolings[0]!)!;
  if (!pooling || !has(wanted)) throw new Error(`${label} has no output ${wanted} (its outputs: ${outputs.map(({ name }) => name).join(', ')})`);
  const info = outputs.find(({ name }) => name === wanted)!;
  checkFloat32(info, label);
  const rank = info.shape.length;
  if (pooling === 'pooler' && rank !== 2 && rank !== 0) throw new Error(`${label}: ${wanted} is of shape [${info.shape.join(', ')}], not [N, D]`);
  if (pooling === 'cls' && rank !== 3 && rank !== 0) throw new Error(`${label}: ${wanted} is of shape [${info.shape.join(', ')}], not tokens [N, T, D] with a CLS token first`);
  if (pooling === 'mean' && rank !== 3 && rank !== 4 && rank !== 0) throw new Error(`${label}: ${wanted} is of shape [${info.shape.join(', ')}], not tokens [N, T, D] or a map [N, C, H, W]`);
  // The CLS token and any register tokens come before the patch tokens that `mean` averages.
  const prefixTokens = rank === 4 ? 0 : 1 + (config.num_register_tokens ?? 0);
  return { output: wanted, pooling, prefixTokens };
}

/** The vector's length where the file fixes it (the last dimension; a map's channels). */
function declaredDim(info: TensorInfo, { pooling }: VisionReadout): number | undefined {
  const dim = info.shape.length === 4 && pooling === 'mean' ? info.shape[1] : info.shape[info.shape.length - 1];
  return typeof dim === 'number' ? dim : undefined;
}
