import { z } from 'zod';

/**
 * One group of indexes: a name, or several, over which each application's shards are placed (docs/decisions.md,
 * "Placement"). The first names the group; an operator adds an index by appending it, never by reordering.
 */
const indexGroup = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);
export type IndexGroup = z.infer<typeof indexGroup>;

/** The indexes of a group, the first naming it. */
export const groupIndexes = (group: IndexGroup): readonly string[] => (typeof group === 'string' ? [group] : group);

/**
 * Where one embedding model's vectors live: its whole-image and object index groups (the local index's names, or the
 * Vectorize bindings) and their dimensions. Each model has indexes of its own, so that an application can be
 * re-embedded into a new model while its searches still use the old one (ingest/reindex.ts).
 */
const embedModelIndexes = z.object({
  dimensions: z.number().int().min(1).max(1536),
  images: indexGroup,
  objects: indexGroup,
  /**
   * The indexes of the model's tuned applications' vectors (docs/decisions.md, "Tuning on a label field"): of the
   * same dimensions; without them, the model's applications cannot be tuned.
   */
  tuned: z.object({ images: indexGroup, objects: indexGroup }).strict().optional(),
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
export function vectorIndexNames(env: EmbedModelSettings, model: string, tuned: boolean): { images: readonly string[]; objects: readonly string[] } {
  const indexes = embedModelIndexesOf(env, model);
  if (tuned && !indexes.tuned) throw new Error(`The embedding model ${model} has no tuned indexes in EMBED_MODELS`);
  const { images, objects } = tuned ? indexes.tuned! : indexes;
  return { images: groupIndexes(images), objects: groupIndexes(objects) };
}

/** EMBED_MODEL: the model new applications are put on. */
export function defaultEmbedModel(env: EmbedModelSettings): string {
  embedModelIndexesOf(env, env.EMBED_MODEL);
  return env.EMBED_MODEL;
}

/** COLOR_INDEXES (wrangler.toml): the group of the palette indexes, every model's, comma-separated, the first naming it. */
export const colorIndexes = (env: { COLOR_INDEXES: string }): readonly string[] =>
  env.COLOR_INDEXES.split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
