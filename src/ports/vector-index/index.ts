import type { Env } from '../../env';
import { localVectorIndex } from './local';
import type { VectorIndex } from './types';

/** The index that holds one vector per image: the whole-image embedding. */
export const IMAGE_INDEX = 'images';

/** Picks the configured vector index adapter (DESIGN.md: nothing account-only unless the config selects it). */
export function vectorIndex(env: Env, indexName: string): VectorIndex {
  if (env.VECTOR_INDEX === 'local') return localVectorIndex(env.LOCAL_VECTOR_INDEX, indexName);
  throw new Error(`Unknown VECTOR_INDEX adapter: ${env.VECTOR_INDEX}`);
}
