import { createHash } from 'node:crypto';
import path from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { z } from 'zod';
import { parseEmbedModels, type EmbedModelIndexes } from '../../src/storage/embed-models.ts';
import { ROOT, useLocalWrangler } from './wrangler-env.ts';

/**
 * The Worker's EMBED_MODELS and EMBED_MODEL from what an inference service loaded (its GET /health), so that
 * INFERENCE_EMBED_MODELS is the one setting to choose models by: `npm start` passes them to the Worker, and
 * `npm run setup:vectorize -- --from-inference` creates their Vectorize indexes.
 */

const servedEmbedder = z.object({ id: z.string().min(1), dim: z.number().int().min(1), text: z.boolean() });
/** An embedder the service loaded, as /health reports it. */
export type ServedEmbedder = z.infer<typeof servedEmbedder>;
const health = z.object({ models: z.string(), embedders: z.array(servedEmbedder).optional() });

/** The embedders of the ready service at `inferenceUrl`, its default first. */
export async function servedEmbedders(inferenceUrl: string): Promise<ServedEmbedder[]> {
  const url = `${inferenceUrl}/health`;
  const response = await fetch(url).catch((error: unknown) => {
    throw new Error(`could not reach the inference service at ${url}: ${error instanceof Error ? (error.cause ?? error.message) : error}`);
  });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  const body = health.parse(await response.json());
  if (body.models !== 'ready') throw new Error(`the inference service at ${inferenceUrl} is still loading its models: retry once its /ready answers 200`);
  if (!body.embedders?.length) throw new Error(`${url} does not list its embedders' dimensions ("embedders"): the service is older than this script`);
  return body.embedders;
}

/**
 * Each name's longest slug: `objects-` + slug + `-` + 8 hex is at most 32 characters (38 with `-tuned`), short enough
 * for the local index and, behind the environment's prefix (`image-search-`), for Vectorize's 64-byte index names.
 */
const SLUG_LENGTH = 15;

/**
 * The local image and object index names of a model wrangler.toml does not list, from its id alone (so the same
 * model keeps its indexes from one start to the next): a slug of its name (a hub repository's or a folder's, else
 * the id's start) and a hash of the whole id, e.g. `images-clip-vit-base-p-1a2b3c4d`. Lowercase letters, digits and
 * dashes, starting with a letter: valid as Vectorize index names too, which setup-vectorize.ts derives from these.
 */
export function indexNamesOf(modelId: string): ModelIndexNames {
  const name = modelId.replace(/^hf:/, '').split('@')[0]!.split('/').at(-1)!;
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, SLUG_LENGTH).replace(/^-+|-+$/g, '') || 'model';
  const key = `${slug}-${createHash('sha256').update(modelId).digest('hex').slice(0, 8)}`;
  return { images: `images-${key}`, objects: `objects-${key}`, tuned: { images: `images-${key}-tuned`, objects: `objects-${key}-tuned` } };
}

/** A model's index names: its own two, and the two of its tuned applications (docs/decisions.md, "Tuning on a label field"). */
export type ModelIndexNames = { images: string; objects: string; tuned: { images: string; objects: string } };

/** EMBED_MODELS and EMBED_MODEL as wrangler.toml's top level (the local stack's) sets them. */
export function configuredEmbedModels(): { models: ReadonlyMap<string, EmbedModelIndexes>; defaultModel: string } {
  useLocalWrangler();
  const { vars } = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml') });
  return { models: parseEmbedModels(String(vars.EMBED_MODELS)), defaultModel: String(vars.EMBED_MODEL) };
}

/**
 * EMBED_MODELS for the models a service loaded, its default (EMBED_MODEL) first: a model `configured` lists keeps its
 * entry (its indexes hold its vectors), another gets `namesOf(id)` and the dimensions the service reports. The
 * configured models it did not load stay listed after them, so that applications still on one can be moved off it
 * by a reindex, which then deletes their vectors there.
 */
export function embedModelsFor(
  served: readonly ServedEmbedder[],
  configured: ReadonlyMap<string, EmbedModelIndexes>,
  namesOf: (modelId: string) => ModelIndexNames = indexNamesOf,
): { models: Record<string, EmbedModelIndexes>; defaultModel: string } {
  const models: Record<string, EmbedModelIndexes> = {};
  for (const { id, dim } of served) {
    const entry = configured.get(id);
    if (entry && entry.dimensions !== dim) throw new Error(`${id}: the inference service makes ${dim}-d vectors, EMBED_MODELS says ${entry.dimensions}`);
    models[id] = entry ?? { dimensions: dim, ...namesOf(id) };
  }
  for (const [id, entry] of configured) models[id] ??= entry;
  return { models, defaultModel: served[0]!.id };
}
