/**
 * Tiny model folders in the Hugging Face layout, written by the tests into a temporary folder: the real families'
 * file names, input and output names and configs, with graphs small enough to check by construction (ONNX encoded
 * by the converter's own onnx-model.ts):
 * - an image tower whose output is the per-channel mean of `pixel_values`, so that a solid colour gives a vector
 *   known in advance (its normalized channel values);
 * - a text tower that looks its tokens up in an embedding table (Gather) and averages them, with a tokenizer whose
 *   colour words' rows are those image vectors: `red` embeds as a red image does.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { encodeModel, type Attribute, type DataType, type Graph, type Node, type Tensor, type ValueInfo } from '../scripts/onnx-converter/onnx-model.ts';

export type Rgb = readonly [number, number, number];
export type Channels = readonly [number, number, number];

export const COLOURS = { red: [255, 0, 0], green: [0, 255, 0], blue: [0, 0, 255] } as const satisfies Record<string, Rgb>;
export type Colour = keyof typeof COLOURS;

export const CLIP_MEAN: Channels = [0.48145466, 0.4578275, 0.40821073];
export const CLIP_STD: Channels = [0.26862954, 0.26130258, 0.27577711];
export const IMAGENET_MEAN: Channels = [0.485, 0.456, 0.406];
export const IMAGENET_STD: Channels = [0.229, 0.224, 0.225];
export const HALF: Channels = [0.5, 0.5, 0.5];

/** A solid colour's channels as the image processor gives them: rescaled by 1/255, then normalized. */
export const channelValues = (rgb: Rgb, mean: Channels, std: Channels): number[] => rgb.map((value, c) => (value / 255 - mean[c]!) / std[c]!);

export const unit = (vector: ArrayLike<number>): number[] => {
  const norm = Math.hypot(...Array.from(vector));
  return Array.from(vector, (value) => value / norm);
};

// --- graphs ---------------------------------------------------------------------------------------------------

export const node = (opType: string, inputs: string[], outputs: string[], attributes: Attribute[] = []): Node => ({ name: outputs[0]!, opType, inputs, outputs, attributes });
export const floats = (dims: number[], values: ArrayLike<number>): Tensor => ({ dtype: 'float32', dims, data: Float32Array.from(values) });
export const int64s = (values: number[]): Tensor => ({ dtype: 'int64', dims: [values.length], data: BigInt64Array.from(values.map(BigInt)) });
export const info = (name: string, dtype: DataType, dims: (number | string)[]): ValueInfo => ({ name, dtype, dims });

export function encode(name: string, nodes: Node[], initializers: [string, Tensor][], inputs: ValueInfo[], outputs: ValueInfo[]): Uint8Array {
  const graph: Graph = { name, nodes, initializers: new Map(initializers), inputs, outputs };
  return encodeModel({ graph, opsetVersion: 17, producerName: 'tiny-models', docString: '' });
}

const pixelValues = (size: number) => info('pixel_values', 'float32', ['batch_size', 3, size, size]);

/**
 * An image tower: `output` [N, dim] is the per-channel mean of pixel_values, times `projection` [3, dim] where given
 * (dim 3 without one), and `extraOutputs` too (e.g. CLIP's last_hidden_state, which nothing reads).
 */
export function channelMeanGraph(output: string, size: number, projection?: { dim: number; weights: number[] }): Uint8Array {
  const nodes = [node('ReduceMean', ['pixel_values'], [projection ? 'means' : output], [{ name: 'axes', ints: [2, 3] }, { name: 'keepdims', int: 0 }])];
  const initializers: [string, Tensor][] = [];
  if (projection) {
    nodes.push(node('MatMul', ['means', 'projection'], [output]));
    initializers.push(['projection', floats([3, projection.dim], projection.weights)]);
  }
  return encode('tiny_vision', nodes, initializers, [pixelValues(size)], [info(output, 'float32', ['batch_size', projection?.dim ?? 3])]);
}

/**
 * A ViT-like image tower's `last_hidden_state` [N, 1 + H*W, 3]: the CLS token first, the per-channel mean of
 * pixel_values; then one token per pixel, its channels negated (so that `mean` pooling gives the opposite of `cls`).
 */
export function tokensGraph(size: number): Uint8Array {
  const nodes = [
    node('ReduceMean', ['pixel_values'], ['means'], [{ name: 'axes', ints: [2, 3] }, { name: 'keepdims', int: 1 }]),
    node('Reshape', ['means', 'cls_shape'], ['cls']),
    node('Reshape', ['pixel_values', 'flat_shape'], ['flat']),
    node('Transpose', ['flat'], ['pixels'], [{ name: 'perm', ints: [0, 2, 1] }]),
    node('Neg', ['pixels'], ['patches']),
    node('Concat', ['cls', 'patches'], ['last_hidden_state'], [{ name: 'axis', int: 1 }]),
  ];
  const initializers: [string, Tensor][] = [
    ['cls_shape', int64s([0, 1, 3])],
    ['flat_shape', int64s([0, 3, -1])],
  ];
  return encode('tiny_tokens', nodes, initializers, [pixelValues(size)], [info('last_hidden_state', 'float32', ['batch_size', 1 + size * size, 3])]);
}

/**
 * A text tower: each token's row of `table` [vocabulary, dim] (Gather), masked by attention_mask where the graph
 * takes one, averaged over the tokens: `output` [N, dim]. `length` fixes the sequence length (SigLIP's 64).
 */
export function tokenTableGraph(output: string, table: number[][], options: { attentionMask: boolean; length?: number }): Uint8Array {
  const dim = table[0]!.length;
  const sequence = options.length ?? 'sequence_length';
  const inputs = [info('input_ids', 'int64', ['batch_size', sequence])];
  const nodes = [node('Gather', ['table', 'input_ids'], ['rows'], [{ name: 'axis', int: 0 }])];
  const initializers: [string, Tensor][] = [['table', floats([table.length, dim], table.flat())]];
  let rows = 'rows';
  if (options.attentionMask) {
    inputs.push(info('attention_mask', 'int64', ['batch_size', sequence]));
    nodes.push(
      node('Cast', ['attention_mask'], ['mask'], [{ name: 'to', int: 1 }]),
      node('Unsqueeze', ['mask', 'last_axis'], ['mask3']),
      node('Mul', ['rows', 'mask3'], ['masked']),
    );
    initializers.push(['last_axis', int64s([2])]);
    rows = 'masked';
  }
  nodes.push(node('ReduceMean', [rows], [output], [{ name: 'axes', ints: [1] }, { name: 'keepdims', int: 0 }]));
  return encode('tiny_text', nodes, initializers, inputs, [info(output, 'float32', ['batch_size', dim])]);
}

// --- tokenizers -------------------------------------------------------------------------------------------------

const addedToken = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });

/** The words the tiny tokenizers know besides their special tokens. */
export const WORDS = ['red', 'green', 'blue', 'a', 'photo', 'of'] as const;

/**
 * CLIP-like: its special tokens and post-processor (RobertaProcessing: <|startoftext|> ... <|endoftext|>), words
 * by a WordPiece vocabulary (real CLIP has byte-level BPE). Ids: 0 <|startoftext|>, 1 <|endoftext|>, 2 [UNK], then WORDS.
 */
export function clipTokenizer(): { tokenizer: object; config: object; vocabulary: string[] } {
  const vocabulary = ['<|startoftext|>', '<|endoftext|>', '[UNK]', ...WORDS];
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [addedToken(0, '<|startoftext|>'), addedToken(1, '<|endoftext|>')],
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: { type: 'RobertaProcessing', sep: ['<|endoftext|>', 1], cls: ['<|startoftext|>', 0], trim_offsets: false, add_prefix_space: false },
    decoder: null,
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: Object.fromEntries(vocabulary.map((word, id) => [word, id])) },
  };
  const config = { model_max_length: 77, bos_token: '<|startoftext|>', eos_token: '<|endoftext|>', pad_token: '<|endoftext|>', unk_token: '[UNK]', tokenizer_class: 'CLIPTokenizer' };
  return { tokenizer, config, vocabulary };
}

/**
 * SigLIP-like: a Unigram (SentencePiece) model with Metaspace, `</s>` appended, padded with `</s>` as SigLIP's
 * tokenizer_config.json says. Ids: 0 <pad>, 1 </s>, 2 <unk>, then ▁WORDS.
 */
export function siglipTokenizer(): { tokenizer: object; config: object; vocabulary: string[] } {
  const vocabulary = ['<pad>', '</s>', '<unk>', ...WORDS.map((word) => `\u2581${word}`)];
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [addedToken(0, '<pad>'), addedToken(1, '</s>'), addedToken(2, '<unk>')],
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [1], tokens: ['</s>'] } },
    },
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 2, vocab: vocabulary.map((piece, id) => [piece, id < 3 ? 0 : -1 - id * 0.01]), byte_fallback: false },
  };
  const config = { model_max_length: 64, eos_token: '</s>', pad_token: '</s>', unk_token: '<unk>', tokenizer_class: 'SiglipTokenizer' };
  return { tokenizer, config, vocabulary };
}

/** An embedding table for a vocabulary: each colour word's row its image vector, every other row zero. */
export function colourTable(vocabulary: readonly string[], vectorOf: (colour: Colour) => number[]): number[][] {
  return vocabulary.map((word) => {
    const colour = word.replace('\u2581', '') as Colour;
    return colour in COLOURS ? vectorOf(colour) : [0, 0, 0];
  });
}

// --- folders ----------------------------------------------------------------------------------------------------

/** Writes a model folder: JSON values as JSON, bytes as they are. */
export function writeModelFolder(folder: string, files: Record<string, object | Uint8Array>): string {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(folder, ...name.split('/'));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content instanceof Uint8Array ? content : JSON.stringify(content, null, 2));
  }
  return folder;
}

/** The input side of the tiny models. */
export const TINY_SIZE = 32;

export type TinyOptions = {
  /** Also (or only, with `fp32: false`) the `_quantized` files: float inside, the export's name. */
  readonly quantized?: boolean;
  readonly fp32?: boolean;
  /** Write the text tower (default true for the two-tower families). */
  readonly text?: boolean;
};

/**
 * Xenova/clip-vit-base-patch32's layout at 32 px: config.json (`clip`, projection_dim 3), the old-style
 * preprocessor_config.json (numbers for size and crop_size: the shortest edge, then a square crop; bicubic, CLIP's
 * mean and std), onnx/vision_model.onnx (pixel_values -> image_embeds), onnx/text_model.onnx (input_ids,
 * attention_mask -> text_embeds), tokenizer.json and tokenizer_config.json.
 */
export function writeClip(folder: string, options: TinyOptions = {}): string {
  const vector = (colour: Colour) => channelValues(COLOURS[colour], CLIP_MEAN, CLIP_STD);
  const { tokenizer, config, vocabulary } = clipTokenizer();
  const vision = channelMeanGraph('image_embeds', TINY_SIZE);
  const text = tokenTableGraph('text_embeds', colourTable(vocabulary, vector), { attentionMask: true });
  return writeModelFolder(folder, {
    'config.json': { model_type: 'clip', projection_dim: 3, text_config: { max_position_embeddings: 77 }, vision_config: { image_size: TINY_SIZE } },
    'preprocessor_config.json': {
      crop_size: TINY_SIZE,
      do_center_crop: true,
      do_normalize: true,
      do_resize: true,
      feature_extractor_type: 'CLIPFeatureExtractor',
      image_mean: CLIP_MEAN,
      image_std: CLIP_STD,
      resample: 3,
      size: TINY_SIZE,
    },
    ...towers(options, { vision_model: vision, ...(options.text !== false && { text_model: text }) }),
    ...(options.text !== false && { 'tokenizer.json': tokenizer, 'tokenizer_config.json': config }),
  });
}

/**
 * google/siglip-base-patch16-224's layout (as Xenova exports it) at 32 px: `siglip` (or `siglip2`), a resize to
 * height/width without a crop, mean and std 0.5; both towers' pooler_output; the text tower takes input_ids alone,
 * exactly 64 of them (padded with </s>, as tokenizer_config.json's model_max_length says).
 */
export function writeSiglip(folder: string, options: TinyOptions & { modelType?: 'siglip' | 'siglip2' } = {}): string {
  const vector = (colour: Colour) => channelValues(COLOURS[colour], HALF, HALF);
  const { tokenizer, config, vocabulary } = siglipTokenizer();
  const vision = channelMeanGraph('pooler_output', TINY_SIZE);
  const text = tokenTableGraph('pooler_output', colourTable(vocabulary, vector), { attentionMask: false, length: 64 });
  return writeModelFolder(folder, {
    'config.json': { model_type: options.modelType ?? 'siglip', text_config: { max_position_embeddings: 64 }, vision_config: { image_size: TINY_SIZE } },
    'preprocessor_config.json': {
      do_normalize: true,
      do_rescale: true,
      do_resize: true,
      image_mean: HALF,
      image_std: HALF,
      processor_class: 'SiglipProcessor',
      resample: 3,
      rescale_factor: 1 / 255,
      size: { height: TINY_SIZE, width: TINY_SIZE },
    },
    ...towers(options, { vision_model: vision, ...(options.text !== false && { text_model: text }) }),
    ...(options.text !== false && { 'tokenizer.json': tokenizer, 'tokenizer_config.json': config }),
  });
}

/**
 * facebook/dinov2-small's layout at 32 px: `dinov2`, the new-style preprocessor_config.json (shortest_edge 36, a
 * 32x32 crop, ImageNet's mean and std), onnx/model.onnx with last_hidden_state alone (the CLS token first).
 */
export function writeDinov2(folder: string, options: TinyOptions = {}): string {
  return writeModelFolder(folder, {
    'config.json': { model_type: 'dinov2', hidden_size: 3, image_size: TINY_SIZE },
    'preprocessor_config.json': {
      crop_size: { height: TINY_SIZE, width: TINY_SIZE },
      do_center_crop: true,
      do_convert_rgb: true,
      do_normalize: true,
      do_rescale: true,
      do_resize: true,
      image_mean: IMAGENET_MEAN,
      image_std: IMAGENET_STD,
      resample: 3,
      rescale_factor: 1 / 255,
      size: { shortest_edge: 36 },
    },
    ...towers(options, { model: tokensGraph(TINY_SIZE) }),
  });
}

/** onnx/NAME.onnx and/or onnx/NAME_quantized.onnx for each tower. */
function towers(options: TinyOptions, graphs: Record<string, Uint8Array>): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {};
  for (const [name, graph] of Object.entries(graphs)) {
    if (options.fp32 !== false) files[`onnx/${name}.onnx`] = graph;
    if (options.quantized) files[`onnx/${name}_quantized.onnx`] = graph;
  }
  return files;
}

/**
 * The service's own MobileNetV2 graph (models/onnx/mobilenet_v2_mid.onnx, converted at install: NHWC input, its
 * last bottleneck [N, 7, 7, 448] among its outputs) rewritten as a MobileNetV2 export in the Hugging Face layout:
 * `pixel_values` [N, 3, 224, 224] transposed to the graph's input, its last bottleneck as `last_hidden_state`
 * [N, 448, 7, 7] and averaged as `pooler_output` [N, 448]; preprocessor_config.json states the service's own
 * preprocessing of it (a Lanczos stretch to 224x224, RGB / 255: the graph maps that to [-1, 1] itself).
 */
export function writeMobileNetV2(folder: string, onnxFile: string, bottleneck: string): string {
  const { onnx } = onnxProto;
  const model = onnx.ModelProto.decode(readFileSync(onnxFile));
  const graph = model.graph!;
  const input = graph.input![0]!.name!;
  const tensor = (name: string, dims: (number | string)[]) =>
    onnx.ValueInfoProto.create({
      name,
      type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: dims.map((dim) => (typeof dim === 'number' ? { dimValue: dim } : { dimParam: dim })) } } },
    });
  const ints = (name: string, values: number[]) => ({ name, type: onnx.AttributeProto.AttributeType.INTS, ints: values });
  graph.input = [tensor('pixel_values', ['batch_size', 3, 224, 224])];
  graph.node = [
    onnx.NodeProto.create({ name: 'to_nhwc', opType: 'Transpose', input: ['pixel_values'], output: [input], attribute: [ints('perm', [0, 2, 3, 1])] }),
    ...graph.node!,
    onnx.NodeProto.create({ name: 'to_nchw', opType: 'Transpose', input: [bottleneck], output: ['last_hidden_state'], attribute: [ints('perm', [0, 3, 1, 2])] }),
    onnx.NodeProto.create({
      name: 'pool',
      opType: 'ReduceMean',
      input: [bottleneck],
      output: ['pooler_output'],
      attribute: [ints('axes', [1, 2]), { name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 0 }],
    }),
  ];
  graph.output = [tensor('last_hidden_state', ['batch_size', 448, 7, 7]), tensor('pooler_output', ['batch_size', 448])];
  return writeModelFolder(folder, {
    'config.json': { model_type: 'mobilenet_v2', depth_multiplier: 1.4, image_size: 224 },
    'preprocessor_config.json': { do_resize: true, size: { height: 224, width: 224 }, resample: 1, do_center_crop: false, do_rescale: true, rescale_factor: 1 / 255, do_normalize: false },
    'onnx/model.onnx': onnx.ModelProto.encode(model).finish(),
  });
}
