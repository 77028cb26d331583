import type { Env } from '../../env';
import { localVectorIndex } from './local';
import { shardedIndex } from './sharded';
import type { VectorIndex } from './types';
import { vectorizeIndex } from './vectorize';

/** Vectorize bindings by index name (wrangler.toml's production and cn environments). */
const VECTORIZE_BINDINGS = { images: 'VECTORIZE_IMAGES', objects: 'VECTORIZE_OBJECTS', colors: 'VECTORIZE_COLORS' } as const;

function baseIndex(env: Env, indexName: string): VectorIndex {
  if (env.VECTOR_INDEX === 'local') return localVectorIndex(env.LOCAL_VECTOR_INDEX, indexName);
  if (env.VECTOR_INDEX === 'vectorize') {
    const binding = env[VECTORIZE_BINDINGS[indexName as keyof typeof VECTORIZE_BINDINGS]];
    if (!binding) throw new Error(`No Vectorize binding for the ${indexName} index`);
    return vectorizeIndex(binding);
  }
  throw new Error(`Unknown VECTOR_INDEX adapter: ${env.VECTOR_INDEX}`);
}

/**
 * The configured vector index adapter (nothing account-only unless the config selects it), spread over
 * `VECTOR_INDEX_SHARDS` namespaces per application so that searches reach the spec's 1000 results.
 */
export const vectorIndex = (env: Env, indexName: string): VectorIndex =>
  shardedIndex(baseIndex(env, indexName), Number(env.VECTOR_INDEX_SHARDS));
