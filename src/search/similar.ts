import type { Env } from '../env';
import { VECTORIZE_LIMITS } from '../ports/vector-index/limits';
import { getImagesByIds, type ImageRow } from '../storage/images';
import { colorVectors, imageIdOfVector, imageVectors, objectVectors } from '../storage/vectors';
import { MAX_RESULTS, type Paging } from './paging';
import { toValueMap } from './value-map';

export type ResultItem = { im_name: string; score?: number; value_map?: Record<string, string> };
export type SearchPage = { total: number; result: ResultItem[] };

export type SimilarQuery = {
  appId: string;
  /**
   * `visual`: an embedding, against whole images (and objects, with `objectType`); `color`: a palette vector,
   * against the palettes of whole images and of their detected objects.
   */
  space: 'visual' | 'color';
  vector: number[];
  /**
   * The query's object type: matched against catalog objects of that type, and against the whole image of catalog
   * images with no detected object. Absent: whole images against whole images.
   */
  objectType?: string | undefined;
  paging: Paging;
  withScore: boolean;
  /** Metadata fields to return in `value_map`; null for none. */
  fields: string[] | null;
  /** Image ids never returned, e.g. the query image itself. */
  excludeIds?: number[];
};

/** Cosine similarity as the spec's score: 1.0 for an identical image, down to 0.0 (DESIGN.md). */
export const toScore = (cosine: number): number => Math.min(1, Math.max(0, cosine));

type Candidate = { imageId: number; score: number; fromObject: boolean };

/** Nearest vectors in the application's namespace. The depth is fixed, not derived from the page, so `total` and the ranking agree across pages. */
async function candidates(env: Env, query: SimilarQuery, depth: number): Promise<Candidate[]> {
  const options = { topK: depth, namespace: query.appId };
  if (query.space === 'color') {
    const matches = await colorVectors(env).query(query.vector, options);
    return matches.map((match) => ({ imageId: imageIdOfVector(match.id), score: toScore(match.score), fromObject: false }));
  }
  const [wholeImages, objects] = await Promise.all([
    imageVectors(env).query(query.vector, options),
    query.objectType === undefined ? [] : objectVectors(env).query(query.vector, { ...options, filter: { type: query.objectType } }),
  ]);
  return [
    ...wholeImages.map((match) => ({ imageId: imageIdOfVector(match.id), score: toScore(match.score), fromObject: false })),
    ...objects.map((match) => ({ imageId: imageIdOfVector(match.id), score: toScore(match.score), fromObject: true })),
  ];
}

/** A whole-image match counts for an object query only where the catalog image has no detected object. */
const admissible = (candidate: Candidate, image: ImageRow, query: SimilarQuery): boolean =>
  query.objectType === undefined || candidate.fromObject || image.object_count === 0;

/**
 * The search pipeline: nearest vectors, joined with D1 so that removed images and other applications' vectors never
 * show, each image once with its best score, ranked by descending score, then paged.
 */
export async function searchSimilar(env: Env, query: SimilarQuery): Promise<SearchPage> {
  const excluded = new Set(query.excludeIds ?? []);
  const found = (await candidates(env, query, Math.min(MAX_RESULTS + excluded.size, VECTORIZE_LIMITS.maxTopK))).filter(
    (candidate) => !excluded.has(candidate.imageId),
  );
  const images = await getImagesByIds(env.DB, query.appId, [...new Set(found.map((candidate) => candidate.imageId))]);

  const best = new Map<number, number>();
  for (const candidate of found) {
    const image = images.get(candidate.imageId);
    if (!image || !admissible(candidate, image, query)) continue;
    best.set(candidate.imageId, Math.max(best.get(candidate.imageId) ?? 0, candidate.score));
  }
  const ranked = [...best]
    .sort(([idA, a], [idB, b]) => b - a || idA - idB)
    .slice(0, MAX_RESULTS);

  const start = (query.paging.page - 1) * query.paging.limit;
  const result = ranked.slice(start, start + query.paging.limit).map(([id, score]): ResultItem => {
    const image = images.get(id)!;
    return {
      im_name: image.im_name,
      ...(query.withScore ? { score } : {}),
      ...(query.fields ? { value_map: toValueMap(image.metadata, query.fields) } : {}),
    };
  });
  return { total: ranked.length, result };
}
