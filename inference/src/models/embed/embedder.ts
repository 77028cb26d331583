import type { TaskResult } from '../../contract.ts';
import type { RgbPixels } from '../../image/decode.ts';
import type { ImageView } from '../../image/view.ts';
import type { InferenceSession, Runtime } from '../../runtime/runtime.ts';
import type { TaskModel } from '../task-model.ts';
import { MOBILENET_V2_INPUT_SIZE, MOBILENET_V2_NODES, MOBILENET_V2_SOURCE, mirrorInput, toMobileNetV2Input } from './mobilenet-v2.ts';
import { averagePool, l2Normalize } from './vector.ts';
import { greyPixels } from '../model-input.ts';

/** Channels of the last bottleneck; within Vectorize's 1536. */
export const EMBED_DIM = 448;
/** Names the network, the node, the pooling and the preprocessing: change it when any changes. */
export const EMBED_MODEL_ID = `mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg${EMBED_DIM}-whole+centre70-mirrored-v2`;

/**
 * The embedding adds the pooled features of several views: the whole picture and its centre 70 % of each side,
 * each also mirrored. Mirroring makes the vector flip-invariant; the centre view lets a cropped copy meet its
 * original half way (README.md "Quality").
 */
export const EMBED_CENTRE_SHARES: readonly number[] = [1, 0.7];

export type EmbedResult = TaskResult<'embed'>;

/**
 * Whole-image embedding: the output of MobileNetV2's last bottleneck block
 * (448 channels, 7x7, before the 1x1 expansion to 1792) averaged over the 7x7
 * positions, summed over the views (EMBED_CENTRE_SHARES, each also
 * mirrored) and L2-normalised. It needs no reduction to fit 1536 dimensions
 * and matched copies to originals better than the reduced 1792-d average pool
 * did; the measurements are in README.md (scripts/measure-embedding.ts, and
 * the views by `npm run eval`).
 */
export class Embedder implements TaskModel {
  readonly task = 'embed';
  readonly modelId = EMBED_MODEL_ID;
  readonly #session: InferenceSession;

  constructor(session: InferenceSession) {
    this.#session = session;
  }

  async predict(view: ImageView): Promise<EmbedResult> {
    const vector = await this.embed(view.pixels);
    return { model: this.modelId, dim: vector.length, vector: Array.from(vector) };
  }

  /** The unit-length embedding of some pixels (a whole image or a crop of one). */
  async embed(pixels: RgbPixels): Promise<Float32Array> {
    const inputs = await Promise.all(EMBED_CENTRE_SHARES.map((share) => toMobileNetV2Input(pixels, 'fill', share)));
    // Asked at once, so that a batching session runs the views together.
    const pooled = await Promise.all(
      inputs.flatMap((input) => [input, mirrorInput(input)]).map(async (input) => {
        const outputs = await this.#session.run(input, [MOBILENET_V2_NODES.lastBottleneck]);
        return averagePool(outputs.get(MOBILENET_V2_NODES.lastBottleneck)!);
      }),
    );
    const vector = l2Normalize(pooled.reduce((sum, next) => sum.map((value, i) => value + next[i]!)));
    if (vector.length !== EMBED_DIM) throw new Error(`embedding has ${vector.length} dimensions, expected ${EMBED_DIM}`);
    return vector;
  }
}

/**
 * Loads the embedder. On a scheduled runtime (models/registry.ts) concurrent embeddings (several requests', or one
 * image's views and object crops) share engine runs.
 */
export async function loadEmbedder(runtime: Runtime): Promise<Embedder> {
  const embedder = new Embedder(await runtime.load(MOBILENET_V2_SOURCE));
  // The first run initialises every kernel; pay for that before serving.
  await embedder.embed(greyPixels(MOBILENET_V2_INPUT_SIZE));
  return embedder;
}
