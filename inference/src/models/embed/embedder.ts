import type { TaskResult } from '@edge-image-search/contract/wire';
import type { RgbPixels } from '../../image/decode.ts';
import type { ImageView } from '../../image/view.ts';
import type { InferenceSession, Runtime } from '../../runtime/runtime.ts';
import { greyPixels } from '../model-input.ts';
import type { TaskModel } from '../task-model.ts';
import { embedViews, pooledOverViews, type EmbedNetwork } from './features.ts';
import { MOBILENET_V2_INPUT_SIZE } from './mobilenet-v2.ts';

/**
 * What an embedder is (embedder-specs.ts lists them): the networks it reads on the same views (features.ts), and
 * how their features, each averaged over its positions and summed over the views, become one unit vector.
 */
export type EmbedderSpec = {
  /** Names the networks, the nodes, the pooling, the views and the join: change it whenever vectors would change. */
  readonly modelId: string;
  /** Within Vectorize's 1536. */
  readonly dim: number;
  readonly networks: readonly EmbedNetwork[];
  /** Each network's summed features, in the order of `networks`, as the unit-length vector. */
  readonly join: (features: readonly Float64Array[]) => Float32Array;
};

export type EmbedResult = TaskResult<'embed'>;

/**
 * What the tasks ask of an embedder (the `embed` task, and detect's crops): the built-in ones (SpecEmbedder, below)
 * and the models in the Hugging Face layout (hf/hf-embedder.ts) alike.
 */
export interface Embedder extends TaskModel {
  readonly task: 'embed';
  /** Names everything that makes its vectors: vectors of different ids are not comparable. */
  readonly modelId: string;
  readonly dim: number;
  predict(view: ImageView): Promise<EmbedResult>;
  /** The unit-length embedding of some pixels (a whole image or a crop of one). */
  embed(pixels: RgbPixels): Promise<Float32Array>;
  /** Present on models that read text (CLIP, SigLIP): the unit-length embedding of a text, comparable with `embed`'s. */
  readonly embedText?: (text: string) => Promise<Float32Array>;
}

/** A built-in embedder (embedder-specs.ts) loaded on a runtime: one session per network of its spec. */
export class SpecEmbedder implements Embedder {
  readonly task = 'embed';
  readonly modelId: string;
  readonly dim: number;
  readonly #spec: EmbedderSpec;
  readonly #sessions: readonly InferenceSession[];

  constructor(spec: EmbedderSpec, sessions: readonly InferenceSession[]) {
    if (sessions.length !== spec.networks.length) throw new Error(`${spec.modelId} reads ${spec.networks.length} networks, got ${sessions.length} sessions`);
    this.modelId = spec.modelId;
    this.dim = spec.dim;
    this.#spec = spec;
    this.#sessions = sessions;
  }

  async predict(view: ImageView): Promise<EmbedResult> {
    const vector = await this.embed(view.pixels);
    return { model: this.modelId, dim: vector.length, vector: Array.from(vector) };
  }

  /** The unit-length embedding of some pixels (a whole image or a crop of one). */
  async embed(pixels: RgbPixels): Promise<Float32Array> {
    const views = await embedViews(pixels);
    // Every network's views are asked at once, so that each network's batching session runs them together.
    const features = await Promise.all(this.#spec.networks.map((network, i) => pooledOverViews(this.#sessions[i]!, network, views)));
    const vector = this.#spec.join(features);
    if (vector.length !== this.dim) throw new Error(`${this.modelId}: ${vector.length} dimensions, expected ${this.dim}`);
    return vector;
  }
}

/**
 * Loads an embedder's networks and warms them. On a scheduled runtime (models/registry.ts) concurrent embeddings
 * (several requests', or one image's views and object crops) share engine runs.
 */
export async function loadEmbedder(runtime: Runtime, spec: EmbedderSpec): Promise<SpecEmbedder> {
  const sessions: InferenceSession[] = [];
  for (const network of spec.networks) sessions.push(await runtime.load(network.source));
  const embedder = new SpecEmbedder(spec, sessions);
  // The first run initialises every kernel; pay for that before serving.
  await embedder.embed(greyPixels(MOBILENET_V2_INPUT_SIZE));
  return embedder;
}
