import type { Env } from '../../env';
import { roundTripMeterOf } from '../../storage/d1-meter';
import { localVectorIndex } from './local';
import { shardedIndex } from './sharded';
import type { VectorIndex } from './types';
import { vectorizeIndex } from './vectorize';

/**
 * The Vectorize binding of an index name: the colour index's is fixed; the embedding models' indexes are named by
 * their bindings in EMBED_MODELS (storage/embed-models.ts).
 */
const VECTORIZE_BINDINGS: Record<string, string> = { colors: 'VECTORIZE_COLORS' };

function baseIndex(env: Env, indexName: string): VectorIndex {
  if (env.VECTOR_INDEX === 'local') return localVectorIndex(env.LOCAL_VECTOR_INDEX, indexName);
  if (env.VECTOR_INDEX === 'vectorize') {
    const binding = (env as unknown as Record<string, Vectorize | undefined>)[VECTORIZE_BINDINGS[indexName] ?? indexName];
    if (!binding) throw new Error(`No Vectorize binding for the ${indexName} index`);
    return vectorizeIndex(binding);
  }
  throw new Error(`Unknown VECTOR_INDEX adapter: ${env.VECTOR_INDEX}`);
}

/**
 * The configured vector index adapter (nothing account-only unless the config selects it), spread over
 * `VECTOR_INDEX_SHARDS` namespaces per application so that searches reach the API's 1000 results. In a request, each
 * call is counted as one round trip, whatever the shards (storage/d1-meter.ts).
 */
export function vectorIndex(env: Env, indexName: string): VectorIndex {
  const index = shardedIndex(baseIndex(env, indexName), Number(env.VECTOR_INDEX_SHARDS));
  return roundTripMeterOf(env)?.vectorIndex(index) ?? index;
}
