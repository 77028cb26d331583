import type { RgbPixels } from '../../image/decode.ts';
import { resizeRgb } from '../../image/resize.ts';
import type { Float32Tensor, InferenceSession, ModelSource } from '../../runtime/runtime.ts';
import { mirrorPixels } from '../model-input.ts';
import { CENTERNET_BACKBONE_NODE, CENTERNET_BACKBONE_SOURCE, centerNetBackboneInput } from './centernet-backbone.ts';
import { MOBILENET_V2_INPUT_SIZE, MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, mobileNetV2Input } from './mobilenet-v2.ts';
import { averagePool } from './vector.ts';

/*
 * What every embedder (embedder-specs.ts) is made of, before any whitening or join: the views and each network's pooled
 * features. Apart from the embedders so that scripts/fit-whitening.ts computes the same features without a whitening.
 */

/** A network an embedding reads: its graph, the node read, and how a view becomes its input. */
export type EmbedNetwork = {
  readonly source: ModelSource;
  readonly node: string;
  readonly toInput: (view: RgbPixels) => Float32Tensor;
};

/** MobileNetV2's last bottleneck: 448 channels, before the 1x1 expansion to 1792. */
export const MOBILENET_V2_NETWORK: EmbedNetwork = {
  source: MOBILENET_V2_SOURCE,
  node: MOBILENET_V2_NODES.lastBottleneck,
  toInput: mobileNetV2Input,
};

/** CenterNet's MobileNetV3 backbone: 120 channels. */
export const CENTERNET_BACKBONE_NETWORK: EmbedNetwork = {
  source: CENTERNET_BACKBONE_SOURCE,
  node: CENTERNET_BACKBONE_NODE,
  toInput: centerNetBackboneInput,
};

/**
 * An embedding adds the pooled features of several views: the whole picture and its centre 70 % of each side,
 * each also mirrored. Mirroring makes the vector flip-invariant; the centre view lets a cropped copy meet its
 * original half way (README.md "The embedding").
 */
const EMBED_CENTRE_SHARES: readonly number[] = [1, 0.7];

/** The views of some pixels, made once for every network: each centre share stretched to 224x224, then mirrored. */
export async function embedViews(pixels: RgbPixels): Promise<RgbPixels[]> {
  const size = MOBILENET_V2_INPUT_SIZE;
  const views = await Promise.all(EMBED_CENTRE_SHARES.map((share) => resizeRgb(pixels, size, size, 'fill', share)));
  return views.flatMap((view) => [view, mirrorPixels(view)]);
}

/** A network's node, averaged over its positions and summed over the views; every view is asked at once. */
export async function pooledOverViews(session: InferenceSession, { node, toInput }: EmbedNetwork, views: readonly RgbPixels[]): Promise<Float64Array> {
  // Asked at once, so that a batching session runs the views together.
  const pooled = await Promise.all(views.map(async (view) => averagePool((await session.run(toInput(view), [node])).get(node)!)));
  return pooled.reduce((sum, next) => sum.map((value, i) => value + next[i]!));
}
