import type { Env } from '../env';
import { IMAGE_INDEX, vectorIndex } from '../ports/vector-index';
import { VECTORIZE_LIMITS } from '../ports/vector-index/limits';
import { getImagesByIds } from '../storage/images';
import { MAX_RESULTS, type Paging } from './paging';
import { toValueMap } from './value-map';

export type ResultItem = { im_name: string; score?: number; value_map?: Record<string, string> };
export type SearchPage = { total: number; result: ResultItem[] };

export type SimilarQuery = {
  appId: string;
  vector: number[];
  paging: Paging;
  withScore: boolean;
  /** Metadata fields to return in `value_map`; null for none. */
  fields: string[] | null;
  /** Image ids never returned, e.g. the query image itself. */
  excludeIds?: number[];
};

/** Cosine similarity as the spec's score: 1.0 for an identical image, down to 0.0 (DESIGN.md). */
export const toScore = (cosine: number): number => Math.min(1, Math.max(0, cosine));

/**
 * The search pipeline: nearest vectors in the application's namespace, joined with D1 so that removed images and
 * other applications' vectors never show, ranked by descending score, then paged.
 */
export async function searchSimilar(env: Env, query: SimilarQuery): Promise<SearchPage> {
  const excluded = new Set(query.excludeIds ?? []);
  // The depth is fixed, not derived from the page, so `total` and the ranking agree across pages.
  const depth = Math.min(MAX_RESULTS + excluded.size, VECTORIZE_LIMITS.maxTopK);
  const matches = await vectorIndex(env, IMAGE_INDEX).query(query.vector, { topK: depth, namespace: query.appId });
  const candidates = matches
    .map((match) => ({ id: Number(match.id), score: toScore(match.score) }))
    .filter((match) => !excluded.has(match.id));
  const images = await getImagesByIds(env.DB, query.appId, candidates.map((match) => match.id));
  const ranked = candidates.filter((match) => images.has(match.id)).slice(0, MAX_RESULTS);

  const start = (query.paging.page - 1) * query.paging.limit;
  const result = ranked.slice(start, start + query.paging.limit).map((match): ResultItem => {
    const image = images.get(match.id)!;
    return {
      im_name: image.im_name,
      ...(query.withScore ? { score: match.score } : {}),
      ...(query.fields ? { value_map: toValueMap(image.metadata, query.fields) } : {}),
    };
  });
  return { total: ranked.length, result };
}
