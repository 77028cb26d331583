/**
 * Tiny clothes parsers in the Hugging Face layout of a SegFormer export (Xenova/segformer_b2_clothes: config.json
 * with `segformer` and id2label, SegformerImageProcessor's preprocessor_config.json, onnx/model.onnx taking
 * `pixel_values` and giving `logits` at 1/4 of the input's resolution), whose class map follows colours by
 * construction: the input is average-pooled 4x4 (the 1/4 resolution), then a 1x1 convolution gives each class the
 * logit 2 m·x - |m|² for its colour m (normalized as the preprocessing normalizes pixels) and the pooled pixel x,
 * that is |x|² - |x - m|²: the nearest colour wins, and the softmax is that of minus the squared distances.
 */
import { encodeModel, type Attribute, type Node, type Tensor, type ValueInfo } from '../scripts/onnx-converter/onnx-model.ts';
import { channelValues, IMAGENET_MEAN, IMAGENET_STD, writeModelFolder, type Rgb } from './tiny-models.ts';

/** A class and the colour the tiny segmenter sees as it. */
export type ColourClass = readonly [label: string, colour: Rgb];

/**
 * Classes with colours: those of `colours`, corners of the RGB cube (a mix of two corners, where a resize blends a
 * shape's edge, is never nearer a third one); every other class far outside the cube, so that it never wins.
 */
function palette(labels: readonly string[], colours: Readonly<Record<string, Rgb>>): ColourClass[] {
  return labels.map((label, index) => [label, colours[label] ?? [-1000 * (index + 1), -1000, -1000]]);
}

/** mattmdjaga/segformer_b2_clothes' id2label, in order; the classes the tests draw have colours. */
export const B2_CLOTHES_CLASSES: readonly ColourClass[] = palette(
  ['Background', 'Hat', 'Hair', 'Sunglasses', 'Upper-clothes', 'Skirt', 'Pants', 'Dress', 'Belt', 'Left-shoe', 'Right-shoe', 'Face', 'Left-leg', 'Right-leg', 'Left-arm', 'Right-arm', 'Bag', 'Scarf'],
  {
    Background: [255, 255, 255],
    'Upper-clothes': [255, 0, 0],
    Skirt: [0, 0, 0],
    Pants: [0, 0, 255],
    Dress: [0, 255, 255],
    'Left-shoe': [0, 255, 0],
    'Right-shoe': [255, 255, 0],
    Bag: [255, 0, 255],
  },
);

/** The FASHN human parser's classes (fashn_human_parser's IDS_TO_LABELS), in order. */
export const FASHN_CLASSES: readonly ColourClass[] = palette(
  ['background', 'face', 'hair', 'top', 'dress', 'skirt', 'pants', 'belt', 'bag', 'hat', 'scarf', 'glasses', 'arms', 'hands', 'legs', 'feet', 'torso', 'jewelry'],
  { background: [255, 255, 255], top: [255, 0, 0], pants: [0, 0, 255] },
);

/** The colour of a class by name. */
export const colourOf = (classes: readonly ColourClass[], label: string): Rgb => classes.find(([name]) => name === label)![1];

const node = (opType: string, inputs: string[], outputs: string[], attributes: Attribute[] = []): Node => ({ name: outputs[0]!, opType, inputs, outputs, attributes });
const floats = (dims: number[], values: ArrayLike<number>): Tensor => ({ dtype: 'float32', dims, data: Float32Array.from(values) });

export type SegmenterGraphOptions = {
  /** The graph's input and output names (the real ones by default). */
  readonly input?: string;
  readonly output?: string;
};

/** The colour-matching segmenter: pixel_values [N, 3, H, W] -> logits [N, C, H/4, W/4], as the module comment says. */
export function colourSegmenterGraph(classes: readonly ColourClass[], options: SegmenterGraphOptions = {}): Uint8Array {
  const input = options.input ?? 'pixel_values';
  const output = options.output ?? 'logits';
  const centres = classes.map(([, colour]) => channelValues(colour, IMAGENET_MEAN, IMAGENET_STD));
  const weights = centres.flatMap((centre) => centre.map((value) => 2 * value));
  const biases = centres.map((centre) => -centre.reduce((sum, value) => sum + value * value, 0));
  const nodes = [
    node('AveragePool', [input], ['pooled'], [{ name: 'kernel_shape', ints: [4, 4] }, { name: 'strides', ints: [4, 4] }]),
    node('Conv', ['pooled', 'weights', 'biases'], [output], [{ name: 'kernel_shape', ints: [1, 1] }]),
  ];
  const inputs: ValueInfo[] = [{ name: input, dtype: 'float32', dims: ['batch_size', 'num_channels', 'height', 'width'] }];
  const outputs: ValueInfo[] = [{ name: output, dtype: 'float32', dims: ['batch_size', 'num_labels', 'logits_height', 'logits_width'] }];
  const initializers = new Map<string, Tensor>([
    ['weights', floats([classes.length, 3, 1, 1], weights)],
    ['biases', floats([classes.length], biases)],
  ]);
  return encodeModel({ graph: { name: 'tiny_segformer', nodes, initializers, inputs, outputs }, opsetVersion: 17, producerName: 'tiny-segformer', docString: '' });
}

export type TinySegformerOptions = SegmenterGraphOptions & {
  readonly classes?: readonly ColourClass[];
  /** config.json's fields, replacing the defaults (`model_type` segformer, id2label from the classes). */
  readonly config?: Record<string, unknown>;
  /** preprocessor_config.json's fields, replacing the defaults (Xenova/segformer_b2_clothes': 512x512, bilinear). */
  readonly preprocessor?: Record<string, unknown>;
};

/** Writes a tiny SegFormer folder in Xenova/segformer_b2_clothes' layout (its classes by default). */
export function writeSegformer(folder: string, options: TinySegformerOptions = {}): string {
  const classes = options.classes ?? B2_CLOTHES_CLASSES;
  const id2label = Object.fromEntries(classes.map(([label], index) => [String(index), label]));
  const label2id = Object.fromEntries(classes.map(([label], index) => [label, index]));
  return writeModelFolder(folder, {
    'config.json': { architectures: ['SegformerForSemanticSegmentation'], model_type: 'segformer', num_channels: 3, id2label, label2id, ...options.config },
    'preprocessor_config.json': {
      do_normalize: true,
      do_reduce_labels: false,
      do_rescale: true,
      do_resize: true,
      feature_extractor_type: 'SegformerFeatureExtractor',
      image_mean: IMAGENET_MEAN,
      image_processor_type: 'SegformerImageProcessor',
      image_std: IMAGENET_STD,
      resample: 2,
      rescale_factor: 1 / 255,
      size: { height: 512, width: 512 },
      ...options.preprocessor,
    },
    'onnx/model.onnx': colourSegmenterGraph(classes, options),
  });
}
