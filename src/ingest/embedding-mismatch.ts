import type { Env } from '../env';
import { embedModelIndexesOf } from '../storage/embed-models';

/**
 * Why an embedding cannot go into `model`'s indexes (another model answered, or EMBED_MODELS has other dimensions):
 * checked by an insert before it writes and by a reindex before it begins and as it re-embeds.
 */
export function embeddingMismatch(env: Env, model: string, embed: { model: string; dim: number }): string | undefined {
  if (embed.model !== model) return `The inference service answered ${embed.model} for ${model}.`;
  const { dimensions } = embedModelIndexesOf(env, model);
  if (embed.dim !== dimensions) return `${model} has ${embed.dim} dimensions; EMBED_MODELS says ${dimensions}.`;
  return undefined;
}
