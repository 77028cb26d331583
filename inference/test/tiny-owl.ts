/**
 * Tiny OWL-ViT and OWLv2 folders in the layout transformers.js loads (Xenova/owlvit-base-patch32): config.json,
 * preprocessor_config.json, tokenizer.json and tokenizer_config.json (padded to 16 with "!"), and one fused
 * onnx/model.onnx taking input_ids and attention_mask [Q, 16] and pixel_values [N, 3, 32, 32], giving logits
 * [N, 16, Q] and pred_boxes [N, 16, 4]. Its answers are known by construction:
 * - the input is cut into a 4x4 grid of 8x8 patches, row by row; a patch's feature is its mean normalized colour;
 * - a prompt's vector is the sum of its tokens' rows (attention-masked) in a table whose colour words' rows are the
 *   normalized colours (clipTokenizer's words), the pad token's blue's (masked out), every other row zero;
 * - logits = patch features . prompt vectors, so "red" scores about 1 on a red patch and near 0 on white, green or blue;
 * - pred_boxes = each patch's own grid cell (centre and size, fractions of the model's input).
 */
import type { Attribute, Tensor, ValueInfo } from '../scripts/onnx-converter/onnx-model.ts';
import { channelValues, clipTokenizer, CLIP_MEAN, CLIP_STD, colourTable, COLOURS, encode, floats, info, int64s, node, writeModelFolder, type Colour } from './tiny-models.ts';

/** The model's input side, its patch side and the grid of patches. */
export const OWL_SIZE = 32;
export const OWL_PATCH = 8;
export const OWL_GRID = OWL_SIZE / OWL_PATCH;
/** OwlViTProcessor pads every prompt to this many tokens; the tiny graph takes no other length. */
export const OWL_TOKENS = 16;

/** A colour's feature as the tiny model computes it: rescaled by 1/255, normalized with CLIP's mean and std. */
export const owlColourVector = (rgb: readonly [number, number, number]): number[] => channelValues(rgb, CLIP_MEAN, CLIP_STD);

/** Each patch's cell [cx, cy, w, h], row by row: what pred_boxes gives. */
export function gridCells(): number[][] {
  const cells: number[][] = [];
  for (let y = 0; y < OWL_GRID; y++) for (let x = 0; x < OWL_GRID; x++) cells.push([(x + 0.5) / OWL_GRID, (y + 0.5) / OWL_GRID, 1 / OWL_GRID, 1 / OWL_GRID]);
  return cells;
}

/** The fused detector graph described above, with the export's input and output names (and `extraInputs`, unused). */
export function owlGraph(table: number[][], extraInputs: ValueInfo[] = []): Uint8Array {
  const attribute = (name: string, ints: number[]): Attribute => ({ name, ints });
  const patches = OWL_GRID * OWL_GRID;
  const nodes = [
    node('AveragePool', ['pixel_values'], ['pooled'], [attribute('kernel_shape', [OWL_PATCH, OWL_PATCH]), attribute('strides', [OWL_PATCH, OWL_PATCH])]),
    node('Reshape', ['pooled', 'channels_patches'], ['by_channel']),
    node('Transpose', ['by_channel'], ['patch_features'], [attribute('perm', [0, 2, 1])]),
    node('Gather', ['table', 'input_ids'], ['rows'], [{ name: 'axis', int: 0 }]),
    node('Cast', ['attention_mask'], ['mask'], [{ name: 'to', int: 1 }]),
    node('Unsqueeze', ['mask', 'last_axis'], ['mask3']),
    node('Mul', ['rows', 'mask3'], ['masked']),
    node('ReduceSum', ['masked', 'token_axis'], ['prompt_vectors'], [{ name: 'keepdims', int: 0 }]),
    node('Transpose', ['prompt_vectors'], ['prompt_columns'], [attribute('perm', [1, 0])]),
    node('MatMul', ['patch_features', 'prompt_columns'], ['logits']),
    node('Identity', ['cells'], ['pred_boxes']),
  ];
  const initializers: [string, Tensor][] = [
    ['table', floats([table.length, 3], table.flat())],
    ['channels_patches', int64s([0, 3, -1])],
    ['last_axis', int64s([2])],
    ['token_axis', int64s([1])],
    ['cells', floats([1, patches, 4], gridCells().flat())],
  ];
  const inputs = [
    info('input_ids', 'int64', ['num_queries', OWL_TOKENS]),
    info('attention_mask', 'int64', ['num_queries', OWL_TOKENS]),
    info('pixel_values', 'float32', ['batch_size', 3, OWL_SIZE, OWL_SIZE]),
    ...extraInputs,
  ];
  return encode('tiny_owl', nodes, initializers, inputs, [info('logits', 'float32', ['batch_size', patches, 'num_queries']), info('pred_boxes', 'float32', ['batch_size', patches, 4])]);
}

/** clipTokenizer with OWL-ViT's pad token "!" added (tokenizer_config.json: pad_token "!", model_max_length 16). */
export function owlTokenizer(): { tokenizer: object; config: object; vocabulary: string[] } {
  const base = clipTokenizer();
  const vocabulary = [...base.vocabulary, '!'];
  const tokenizer = base.tokenizer as { model: object };
  return {
    tokenizer: { ...tokenizer, model: { ...tokenizer.model, vocab: Object.fromEntries(vocabulary.map((word, id) => [word, id])) } },
    config: { ...base.config, model_max_length: OWL_TOKENS, pad_token: '!', tokenizer_class: 'CLIPTokenizer', processor_class: 'OwlViTProcessor' },
    vocabulary,
  };
}

/**
 * The tiny tokenizer's embedding table: colour words' rows their features; the pad token's row blue's, so that
 * padding read without its attention mask would make every prompt blue.
 */
export const owlTable = (vocabulary: string[]) =>
  colourTable(vocabulary, (colour: Colour) => owlColourVector(COLOURS[colour])).map((row, id) => (vocabulary[id] === '!' ? owlColourVector(COLOURS.blue) : row));

/** `imageSize` and `patch` go with a `graph` of other shapes (inference/scripts/sized-owl.ts). */
export type TinyOwlOptions = { readonly quantized?: boolean; readonly graph?: Uint8Array; readonly imageSize?: number; readonly patch?: number };

/** The files both families share: the tokenizer and the fused model (and its quantized variant). */
function owlFiles(options: TinyOwlOptions): Record<string, object | Uint8Array> {
  const { tokenizer, config, vocabulary } = owlTokenizer();
  const graph = options.graph ?? owlGraph(owlTable(vocabulary));
  return {
    'tokenizer.json': tokenizer,
    'tokenizer_config.json': config,
    'onnx/model.onnx': graph,
    ...(options.quantized && { 'onnx/model_quantized.onnx': graph }),
  };
}

/**
 * google/owlvit-base-patch32 as Xenova exports it, at 32 px: `owlvit`, text max_position_embeddings 16, the old-style
 * preprocessor_config.json (bare numbers: a 32x32 stretch, then a 32x32 crop that keeps it all; bicubic, CLIP's mean
 * and std).
 */
export function writeOwlVit(folder: string, options: TinyOwlOptions = {}): string {
  const { imageSize = OWL_SIZE, patch = OWL_PATCH } = options;
  return writeModelFolder(folder, {
    'config.json': { model_type: 'owlvit', text_config: { max_position_embeddings: OWL_TOKENS }, vision_config: { image_size: imageSize, patch_size: patch } },
    'preprocessor_config.json': {
      crop_size: imageSize,
      do_center_crop: true,
      do_normalize: true,
      do_resize: true,
      feature_extractor_type: 'OwlViTFeatureExtractor',
      image_mean: CLIP_MEAN,
      image_std: CLIP_STD,
      resample: 3,
      size: imageSize,
    },
    ...owlFiles(options),
  });
}

/**
 * google/owlv2-base-patch16-ensemble's layout at 32 px: `owlv2`, Owlv2ImageProcessor's preprocessor_config.json
 * (rescale, pad to a square, resize to height/width bilinearly, normalize with CLIP's mean and std).
 */
export function writeOwlV2(folder: string, options: TinyOwlOptions = {}): string {
  const { imageSize = OWL_SIZE, patch = OWL_PATCH } = options;
  return writeModelFolder(folder, {
    'config.json': { model_type: 'owlv2', text_config: { max_position_embeddings: OWL_TOKENS }, vision_config: { image_size: imageSize, patch_size: patch } },
    'preprocessor_config.json': {
      do_normalize: true,
      do_pad: true,
      do_rescale: true,
      do_resize: true,
      image_mean: CLIP_MEAN,
      image_processor_type: 'Owlv2ImageProcessor',
      image_std: CLIP_STD,
      processor_class: 'Owlv2Processor',
      resample: 2,
      rescale_factor: 1 / 255,
      size: { height: imageSize, width: imageSize },
    },
    ...owlFiles(options),
  });
}
