import { ApiError } from '../../errors.ts';
import type { Embedder } from './embedder.ts';

/**
 * The embedders a service loaded (INFERENCE_EMBED_MODELS), the default first. A request names one by its full id
 * (the form field `embed_model`, the id its answer reports as `embed.model`) for its `embed` task and its objects'
 * crop embeddings alike.
 */
export class EmbedderSet {
  /** The loaded embedders' ids, the default first. */
  readonly ids: readonly string[];
  readonly #byId: ReadonlyMap<string, Embedder>;
  readonly #default: Embedder;

  constructor(embedders: readonly Embedder[]) {
    if (!embedders[0]) throw new Error('a service needs an embedder');
    this.#default = embedders[0];
    this.#byId = new Map(embedders.map((embedder) => [embedder.modelId, embedder]));
    this.ids = [...this.#byId.keys()];
  }

  /** The embedder of that id, the default when none is named; an id not loaded answers 400 unknown_embed_model. */
  select(modelId: string | undefined): Embedder {
    if (modelId === undefined) return this.#default;
    const embedder = this.#byId.get(modelId);
    if (!embedder) throw new ApiError(400, 'unknown_embed_model', `The embed model "${modelId}" is not loaded; this service has: ${this.ids.join(', ')}.`);
    return embedder;
  }
}
