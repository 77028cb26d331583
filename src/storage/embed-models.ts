import { z } from 'zod';

/**
 * Where one embedding model's vectors live: its whole-image and object indexes (the local index's names, or the
 * Vectorize bindings) and their dimensions. Each model has indexes of its own, so that an application can be
 * re-embedded into a new model while its searches still use the old one (ingest/reindex.ts).
 */
const embedModelIndexes = z.object({
  dimensions: z.number().int().min(1).max(1536),
  images: z.string().min(1),
  objects: z.string().min(1),
  /**
   * The indexes of the model's tuned applications' vectors (docs/decisions.md, "Tuning on a label field"): of the
   * same dimensions; without them, the model's applications cannot be tuned.
   */
  tuned: z.object({ images: z.string().min(1), objects: z.string().min(1) }).strict().optional(),
});
export type EmbedModelIndexes = z.infer<typeof embedModelIndexes>;

/** The two settings of wrangler.toml this reads (Env's, given alone so that scripts read them too). */
type EmbedModelSettings = { EMBED_MODELS: string; EMBED_MODEL: string };

const embedModelsConfig = z.record(z.string().min(1), embedModelIndexes);

/** The EMBED_MODELS setting read (also by scripts/setup-vectorize.ts); a malformed one throws. */
export const parseEmbedModels = (json: string): ReadonlyMap<string, EmbedModelIndexes> =>
  new Map(Object.entries(embedModelsConfig.parse(JSON.parse(json))));

const parsed = new Map<string, ReadonlyMap<string, EmbedModelIndexes>>();

/** EMBED_MODELS (wrangler.toml): the models applications may be on, by the id the inference service reports. */
export function embedModels(env: EmbedModelSettings): ReadonlyMap<string, EmbedModelIndexes> {
  let models = parsed.get(env.EMBED_MODELS);
  if (!models) {
    models = parseEmbedModels(env.EMBED_MODELS);
    parsed.set(env.EMBED_MODELS, models);
  }
  return models;
}

export const isEmbedModel = (env: EmbedModelSettings, model: string): boolean => embedModels(env).has(model);

/** The indexes of a model an application is on; a model missing from EMBED_MODELS is a configuration error. */
export function embedModelIndexesOf(env: EmbedModelSettings, model: string): EmbedModelIndexes {
  const indexes = embedModels(env).get(model);
  if (!indexes) throw new Error(`The embedding model ${model} is not in EMBED_MODELS`);
  return indexes;
}

/** The indexes a model's applications' vectors are in: its own, or (`tuned`) those of its tuned applications. */
export function vectorIndexNames(env: EmbedModelSettings, model: string, tuned: boolean): { images: string; objects: string } {
  const indexes = embedModelIndexesOf(env, model);
  if (!tuned) return indexes;
  if (!indexes.tuned) throw new Error(`The embedding model ${model} has no tuned indexes in EMBED_MODELS`);
  return indexes.tuned;
}

/** EMBED_MODEL: the model new applications are put on. */
export function defaultEmbedModel(env: EmbedModelSettings): string {
  embedModelIndexesOf(env, env.EMBED_MODEL);
  return env.EMBED_MODEL;
}
