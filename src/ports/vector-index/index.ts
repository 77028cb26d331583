import type { Env } from '../../env';
import { localVectorIndex } from './local';
import type { VectorIndex } from './types';

/** Picks the configured vector index adapter (DESIGN.md: nothing account-only unless the config selects it). */
export function vectorIndex(env: Env, indexName: string): VectorIndex {
  if (env.VECTOR_INDEX === 'local') return localVectorIndex(env.LOCAL_VECTOR_INDEX, indexName);
  throw new Error(`Unknown VECTOR_INDEX adapter: ${env.VECTOR_INDEX}`);
}
