/**
 * Tiny detectors of the DETR family in the Hugging Face layout, written by the tests into a temporary folder: the
 * real families' config.json (`model_type`, `id2label`), preprocessor_config.json (each processor's own keys and
 * forms of `size`) and onnx/model.onnx with the real input and output names, encoded by the converter's
 * onnx-model.ts. The graph's answers are known by construction: four queries, one per quadrant of the image it is
 * fed; a query's box is its quadrant, its class logits the quadrant's mean colour mapped so that a channel at 0 gives
 * -4 and at 255 gives +4 (after the family's rescale and normalize). So a red block filling the top-left quadrant of
 * a black image is "red" in the top-left quarter of the original image, whatever its size.
 */
import { encodeModel, type Attribute, type DataType, type Node, type Tensor, type ValueInfo } from '../scripts/onnx-converter/onnx-model.ts';
import { IMAGENET_MEAN, IMAGENET_STD, writeModelFolder, type Channels } from './tiny-models.ts';

export const CLASSES = ['red', 'green', 'blue'] as const;
export const ID2LABEL = Object.fromEntries(CLASSES.map((name, id) => [String(id), name]));

/** The quadrants' boxes (centre x, centre y, width, height, relative): top left, top right, bottom left, bottom right. */
export const QUADRANTS = [
  [0.25, 0.25, 0.5, 0.5],
  [0.75, 0.25, 0.5, 0.5],
  [0.25, 0.75, 0.5, 0.5],
  [0.75, 0.75, 0.5, 0.5],
] as const;

export type DetrGraphOptions = {
  /** The family's normalization (absent: rescaled only, RT-DETR's), so that 0 and 255 map to -4 and +4. */
  readonly normalize?: { readonly mean: Channels; readonly std: Channels };
  /** A last "no object" class with logit 0 (DETR, YOLOS). */
  readonly noObject: boolean;
  /** Takes `pixel_mask` (DETR, conditional DETR): the logits drop by 100 times the share of masked pixels. */
  readonly pixelMask: boolean;
  /** Other names, for the refusals. */
  readonly inputName?: string;
  readonly boxesName?: string;
};

const node = (opType: string, inputs: string[], outputs: string[], attributes: Attribute[] = []): Node => ({ name: outputs[0]!, opType, inputs, outputs, attributes });
const floats = (dims: number[], values: ArrayLike<number>): Tensor => ({ dtype: 'float32', dims, data: Float32Array.from(values) });
const int64s = (values: number[]): Tensor => ({ dtype: 'int64', dims: [values.length], data: BigInt64Array.from(values.map(BigInt)) });
const info = (name: string, dtype: DataType, dims: (number | string)[]): ValueInfo => ({ name, dtype, dims });

/** The quadrant graph: `logits` [1, 4, 3 (+1)], `pred_boxes` [1, 4, 4] (the quadrants), from `pixel_values` [1, 3, H, W] with even H and W. */
export function quadrantDetrGraph(options: DetrGraphOptions): Uint8Array {
  const input = options.inputName ?? 'pixel_values';
  const boxes = options.boxesName ?? 'pred_boxes';
  // Each channel's value at 0 and at 255 after preprocessing; logit = scale * value + bias maps them to -4 and +4.
  const off = [0, 1, 2].map((c) => (options.normalize ? -options.normalize.mean[c]! / options.normalize.std[c]! : 0));
  const on = [0, 1, 2].map((c) => (options.normalize ? (1 - options.normalize.mean[c]!) / options.normalize.std[c]! : 1));
  const scale = on.map((value, c) => 8 / (value - off[c]!));
  const bias = off.map((value, c) => -4 - scale[c]! * value);

  const nodes: Node[] = [
    node('Split', [input], ['top', 'bottom'], [{ name: 'axis', int: 2 }]),
    node('Split', ['top'], ['q0', 'q1'], [{ name: 'axis', int: 3 }]),
    node('Split', ['bottom'], ['q2', 'q3'], [{ name: 'axis', int: 3 }]),
    ...[0, 1, 2, 3].flatMap((q) => [
      node('ReduceMean', [`q${q}`], [`mean${q}`], [{ name: 'axes', ints: [2, 3] }, { name: 'keepdims', int: 0 }]),
      node('Unsqueeze', [`mean${q}`, 'axis1'], [`row${q}`]),
    ]),
    node('Concat', ['row0', 'row1', 'row2', 'row3'], ['means'], [{ name: 'axis', int: 1 }]),
    node('Mul', ['means', 'scale'], ['scaled']),
    node('Add', ['scaled', 'bias'], [options.noObject || options.pixelMask ? 'classes' : 'logits']),
    node('Identity', ['quadrants'], [boxes]),
  ];
  const initializers = new Map<string, Tensor>([
    ['axis1', int64s([1])],
    ['scale', floats([3], scale)],
    ['bias', floats([3], bias)],
    ['quadrants', floats([1, 4, 4], QUADRANTS.flat())],
  ]);
  let logits = 'classes';
  if (options.noObject) {
    nodes.push(node('Concat', ['classes', 'no_object'], [options.pixelMask ? 'with_no_object' : 'logits'], [{ name: 'axis', int: 2 }]));
    initializers.set('no_object', floats([1, 4, 1], [0, 0, 0, 0]));
    logits = 'with_no_object';
  }
  const inputs = [info(input, 'float32', ['batch_size', 3, 'height', 'width'])];
  if (options.pixelMask) {
    inputs.push(info('pixel_mask', 'int64', ['batch_size', 'height', 'width']));
    nodes.push(
      node('Cast', ['pixel_mask'], ['mask'], [{ name: 'to', int: 1 }]),
      node('ReduceMean', ['mask'], ['kept'], [{ name: 'axes', ints: [1, 2] }, { name: 'keepdims', int: 0 }]),
      node('Sub', ['kept', 'one'], ['masked_share']),
      node('Mul', ['masked_share', 'hundred'], ['penalty']),
      node('Add', [logits, 'penalty'], ['logits']),
    );
    initializers.set('one', floats([1], [1]));
    initializers.set('hundred', floats([1], [100]));
  }
  const classes = CLASSES.length + (options.noObject ? 1 : 0);
  const graph = { name: 'tiny_detr', nodes, initializers, inputs, outputs: [info('logits', 'float32', ['batch_size', 4, classes]), info(boxes, 'float32', ['batch_size', 4, 4])] };
  return encodeModel({ graph, opsetVersion: 17, producerName: 'tiny-detr', docString: '' });
}

export type TinyDetrFamily = 'detr' | 'conditional_detr' | 'yolos' | 'rt_detr' | 'rt_detr_v2';

/**
 * A tiny model folder of a family at a small size (the DETR-like ones: shortest edge 32, longest 64; RT-DETR: a
 * 32x32 stretch): facebook/detr-resnet-50's old-style preprocessor_config.json (a bare `size` with `max_size`),
 * microsoft/conditional-detr-resnet-50's and hustvl/yolos-small's `{shortest_edge, longest_edge}`, PekingU/rtdetr's
 * `{height, width}` without normalization. `graph` replaces the model (refusals); `quantized` adds onnx/model_quantized.onnx.
 */
export function writeTinyDetr(folder: string, family: TinyDetrFamily, extra: { graph?: Uint8Array; quantized?: boolean; config?: object; preprocessor?: object } = {}): string {
  const normalized = { mean: IMAGENET_MEAN, std: IMAGENET_STD };
  const rtDetr = family === 'rt_detr' || family === 'rt_detr_v2';
  const graph =
    extra.graph ??
    quadrantDetrGraph({
      ...(!rtDetr && { normalize: normalized }),
      noObject: family === 'detr' || family === 'yolos',
      pixelMask: family === 'detr' || family === 'conditional_detr',
    });
  const common = { do_normalize: !rtDetr, do_rescale: true, do_resize: true, image_mean: IMAGENET_MEAN, image_std: IMAGENET_STD, resample: 2, rescale_factor: 1 / 255 };
  const preprocessor: Record<TinyDetrFamily, object> = {
    detr: { ...common, feature_extractor_type: 'DetrFeatureExtractor', format: 'coco_detection', max_size: 64, size: 32 },
    conditional_detr: { ...common, image_processor_type: 'ConditionalDetrImageProcessor', do_pad: true, format: 'coco_detection', size: { shortest_edge: 32, longest_edge: 64 } },
    yolos: { ...common, image_processor_type: 'YolosImageProcessor', do_pad: true, format: 'coco_detection', size: { shortest_edge: 32, longest_edge: 64 } },
    rt_detr: { ...common, image_processor_type: 'RTDetrImageProcessor', do_pad: false, pad_size: null, size: { height: 32, width: 32 } },
    rt_detr_v2: { ...common, image_processor_type: 'RTDetrImageProcessor', do_pad: false, size: { height: 32, width: 32 } },
  };
  return writeModelFolder(folder, {
    'config.json': { model_type: family, id2label: ID2LABEL, label2id: Object.fromEntries(CLASSES.map((name, id) => [name, id])), ...extra.config },
    'preprocessor_config.json': { ...preprocessor[family], ...extra.preprocessor },
    'onnx/model.onnx': graph,
    ...(extra.quantized && { 'onnx/model_quantized.onnx': graph }),
  });
}
