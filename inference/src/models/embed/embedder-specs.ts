import type { EmbedderSpec } from './embedder.ts';
import { CENTERNET_BACKBONE_NETWORK, MOBILENET_V2_NETWORK } from './features.ts';
import { l2Normalize } from './vector.ts';
import { Whitening } from './whitening.ts';

/*
 * The embedders the service can load, by the short names INFERENCE_EMBED_MODELS lists. Several load side by side so
 * that an application keeps its old embedding while its catalog is embedded again with a new one (a reindex).
 */

const MOBILENET_V2_DIM = 448;

/**
 * MobileNetV2's last bottleneck block (448 channels, 7x7, before the 1x1 expansion to 1792) averaged over the 7x7
 * positions, summed over the views and L2-normalised. It needs no reduction to fit 1536 dimensions and matched
 * copies to originals better than the reduced 1792-d average pool did; the measurements are in README.md
 * (scripts/measure-embedding.ts, and the views by `npm run eval`).
 */
export const MOBILENET_V2_EMBEDDER: EmbedderSpec = {
  modelId: `mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg${MOBILENET_V2_DIM}-whole+centre70-mirrored-v2`,
  dim: MOBILENET_V2_DIM,
  networks: [MOBILENET_V2_NETWORK],
  join: ([features]) => l2Normalize(features!),
};

/** The fused embedding's MobileNetV2 part's whitening, fit by scripts/fit-whitening.ts on stamps the eval never scores. */
const MOBILENET_V2_WHITENING = Whitening.read(new URL('./whitening-mobilenet-v2-pca256-pow0.25-tuxpaint570-v1.json', import.meta.url));

/** The fused embedding's parts' dimensions, in the order they are joined: whitened MobileNetV2's, CenterNet's backbone's. */
export const FUSED_PART_DIMS: readonly number[] = [MOBILENET_V2_WHITENING.kept, 120];
const FUSED_DIM = FUSED_PART_DIMS.reduce((sum, dim) => sum + dim);

/**
 * The join of two networks' features (issue 21), each L2-normalised first so that both parts weigh the same whatever
 * their scale; the joined vector is L2-normalised again.
 * - MobileNetV2's last bottleneck matches copies to their originals; whitened (whitening.ts), it also matches the
 *   copies that several edits changed at once.
 * - CenterNet's backbone (centernet-backbone.ts), trained on COCO's objects, adds what kind of thing is shown.
 */
export const FUSED_EMBEDDER: EmbedderSpec = {
  modelId:
    `mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg${MOBILENET_V2_DIM}-${MOBILENET_V2_WHITENING.id}` +
    `+centernet_mobilenetv3-human3.3.6-expanded_conv_14_avg120_224-whole+centre70-mirrored-fused${FUSED_DIM}-v3`,
  dim: FUSED_DIM,
  networks: [MOBILENET_V2_NETWORK, CENTERNET_BACKBONE_NETWORK],
  join: ([mobileNetV2, centerNetBackbone]) => {
    const parts = [MOBILENET_V2_WHITENING.apply(l2Normalize(mobileNetV2!)), l2Normalize(centerNetBackbone!)];
    return l2Normalize(parts.flatMap((part) => Array.from(part)));
  },
};

/** The short names INFERENCE_EMBED_MODELS may list; its default loads both, today's embedding the default. */
export const EMBEDDER_NAMES = ['mobilenet-v2', 'fused'] as const;
export type EmbedderName = (typeof EMBEDDER_NAMES)[number];

export const EMBEDDER_SPECS: Readonly<Record<EmbedderName, EmbedderSpec>> = {
  'mobilenet-v2': MOBILENET_V2_EMBEDDER,
  fused: FUSED_EMBEDDER,
};
