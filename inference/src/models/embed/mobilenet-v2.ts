import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RgbPixels } from '../../image/decode.ts';
import { resizeRgb, type ResizeFit } from '../../image/resize.ts';
import type { Float32Tensor, ModelSource } from '../../runtime/runtime.ts';

const BACKBONE = 'StatefulPartitionedCall/sequential/keras_layer/StatefulPartitionedCall/StatefulPartitionedCall/StatefulPartitionedCall/predict/MobilenetV2/';

/** Graph nodes read by the embedder and by scripts/measure-embedding.ts. */
export const MOBILENET_V2_NODES = {
  /** 7x7 average of lastConv: [1, 1, 1, 1792]. */
  pooled: `${BACKBONE}Logits/AvgPool`,
  /** Last 1x1 convolution after ReLU6: [1, 7, 7, 1792]. */
  lastConv: `${BACKBONE}Conv_1/Relu6`,
  /** Last bottleneck output (linear, before the 1x1 expansion): [1, 7, 7, 448]. */
  lastBottleneck: `${BACKBONE}expanded_conv_16/project/BatchNorm/FusedBatchNormV3`,
} as const;

/**
 * The MobileNetV2 (depth multiplier 1.4, 224 px) graph that nsfwjs v4 ships as
 * "mobilenet_v2_mid": an ImageNet TF-Hub feature extractor with nsfwjs's 5-class
 * head on top. Only the backbone is used here (the head is pruned from the
 * ONNX copy). The input's batch dimension is free.
 */
export const MOBILENET_V2_SOURCE: ModelSource = {
  format: 'tfjs-graph-js-bundle',
  // nsfwjs's own loader imports ../../models/mobilenet_v2_mid/*.min.js from its
  // dist/esm/ folders; the package exports no path to the files themselves.
  directory: path.resolve(
    path.dirname(fileURLToPath(import.meta.resolve('nsfwjs/models/mobilenet_v2_mid'))),
    '../../models/mobilenet_v2_mid',
  ),
  name: 'mobilenet_v2_mid',
  outputs: Object.values(MOBILENET_V2_NODES),
};

export const MOBILENET_V2_INPUT_SIZE = 224;

/**
 * The picture (or its centre `centreShare` of each side) resized to 224x224
 * as the graph's input (mobileNetV2Input). With fit 'fill' this is what nsfwjs
 * feeds the model (it stretches rather than crops).
 */
export async function toMobileNetV2Input(pixels: RgbPixels, fit: ResizeFit, centreShare = 1): Promise<Float32Tensor> {
  const size = MOBILENET_V2_INPUT_SIZE;
  return mobileNetV2Input(await resizeRgb(pixels, size, size, fit, centreShare));
}

/** 224x224 pixels with RGB scaled to [0, 1]; the graph's hub_input layer maps that to [-1, 1] itself. */
export function mobileNetV2Input(view: RgbPixels): Float32Tensor {
  // A plain loop: Float32Array.from with a map function took 12 ms here, on the service's main thread.
  const data = new Float32Array(view.data.length);
  for (let i = 0; i < data.length; i++) data[i] = view.data[i]! / 255;
  return { data, shape: [1, view.height, view.width, 3] };
}
