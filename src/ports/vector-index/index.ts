import type { Env } from '../../env';
import { roundTripMeterOf } from '../../storage/d1-meter';
import { localVectorIndex } from './local';
import { shardedIndex, type ShardPlacement } from './sharded';
import type { VectorIndex } from './types';
import { vectorizeIndex } from './vectorize';

/** One index by its name: the local index's, or the Vectorize binding's (EMBED_MODELS and COLOR_INDEXES name them). */
export function physicalIndex(env: Env, indexName: string): VectorIndex {
  if (env.VECTOR_INDEX === 'local') return localVectorIndex(env.LOCAL_VECTOR_INDEX, indexName);
  if (env.VECTOR_INDEX === 'vectorize') {
    const binding = (env as unknown as Record<string, Vectorize | undefined>)[indexName];
    if (!binding) throw new Error(`No Vectorize binding named ${indexName}`);
    return vectorizeIndex(binding);
  }
  throw new Error(`Unknown VECTOR_INDEX adapter: ${env.VECTOR_INDEX}`);
}

/** Namespaces per application and index group (VECTOR_INDEX_SHARDS). */
export const shardCount = (env: Env): number => Number(env.VECTOR_INDEX_SHARDS);

/**
 * A group of indexes of the configured adapter (nothing account-only unless the config selects it), each application
 * spread over `VECTOR_INDEX_SHARDS` namespaces so that searches reach the API's 1000 results, its shards in the
 * group's indexes as `placementOf` says. In a request, each call is counted as one round trip, whatever the shards
 * (storage/d1-meter.ts).
 */
export function vectorIndex(env: Env, group: readonly string[], placementOf?: ShardPlacement): VectorIndex {
  const index = shardedIndex(new Map(group.map((name) => [name, physicalIndex(env, name)])), shardCount(env), placementOf);
  return roundTripMeterOf(env)?.vectorIndex(index) ?? index;
}
