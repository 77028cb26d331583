import type { Env } from '../env';
import { matches, pushDown, type Condition, type Filter } from '../filter';
import type { VectorFilter } from '../ports/vector-index/types';
import { getImagesByIds, type ImageSummary } from '../storage/images';
import { fieldValue, type ImageMetadata } from '../storage/metadata';
import { canPushDown, OBJECT_TYPE_KEY, parseMetadataIndexes, vectorMetadataKey, type MetadataIndexes, type MetadataIndexKind } from '../storage/vector-metadata';
import { colorVectors, imageIdOfVector, imageVectors, objectVectors } from '../storage/vectors';
import { facetsOf, type Facet } from './facets';
import type { SearchOptions } from './options';
import { MAX_RESULTS } from './paging';
import { toValueMap } from './value-map';

export type ResultItem = { im_name: string; score?: number; value_map?: Record<string, string> };
export type GroupedResults = { group_by_key: string; group_limit: number; group_results: { group_by_value: string; result: ResultItem[] }[] };
/** What a search adds to its endpoint's envelope: `total`, then `result` or the grouped results, and `facets`. */
export type SearchPage = { total: number } & ({ result: ResultItem[] } | GroupedResults) & { facets?: Facet[] };

export type SimilarQuery = {
  appId: string;
  /** The application's embedding model: whose indexes a visual query searches. */
  embedModel: string;
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
  /**
   * Without `objectType`: whole images and catalog objects of every type alike (a text may describe either), each
   * image at its best match.
   */
  anyObject?: boolean;
  /** Image ids never returned, e.g. the query image itself. */
  excludeIds?: number[];
};

/** Cosine similarity as the spec's score: 1.0 for an identical image, down to 0.0 (docs/decisions.md). */
export const toScore = (cosine: number): number => Math.min(1, Math.max(0, cosine));

/**
 * `score`: the raw cosine, which ranks; the answer's score is clamped (toScore) only when shown and held to the score
 * range, since a text's cosines with unrelated images are often below 0 (SigLIP) and must still rank.
 */
type Candidate = { imageId: number; score: number; fromObject: boolean };
type Ranked = { image: ImageSummary; score: number };

const indexKind = (condition: Condition): MetadataIndexKind | undefined =>
  condition.kind === 'string' ? 'string' : condition.kind === 'number' || condition.kind === 'range' ? 'number' : undefined;

/**
 * The part of the filter the vector index applies itself (equality, `in` and ranges on fields with a metadata
 * index of the condition's kind, carried by every vector), so that a filtered query still fills its depth with
 * matching images. Every filter is checked exactly again after the query.
 */
export function indexFilter(filter: Filter, indexes: MetadataIndexes, carriedFields: ReadonlySet<string>): VectorFilter | undefined {
  const conditions = filter.conditions.filter((condition) => {
    const kind = indexKind(condition);
    return kind !== undefined && carriedFields.has(condition.field) && canPushDown(indexes, condition.field, kind);
  });
  const pushed = pushDown({ conditions, ignoredFields: [] }).vectorFilter;
  if (!pushed) return undefined;
  return Object.fromEntries(Object.entries(pushed).map(([field, condition]) => [vectorMetadataKey(field)!, condition]));
}

/** Nearest vectors in the application's namespace, at a fixed depth so that `total` and ranks agree across pages. */
async function candidates(env: Env, query: SimilarQuery, search: SearchOptions, depth: number): Promise<Candidate[]> {
  const pushed = indexFilter(search.filter, parseMetadataIndexes(env.VECTOR_METADATA_INDEXES), search.carriedFields);
  const options = { topK: depth, namespace: query.appId, ...(pushed ? { filter: pushed } : {}) };
  if (query.space === 'color') {
    const found = await colorVectors(env).query(query.vector, options);
    return found.map((match) => ({ imageId: imageIdOfVector(match.id), score: match.score, fromObject: false }));
  }
  const [wholeImages, objects] = await Promise.all([
    imageVectors(env, query.embedModel).query(query.vector, options),
    query.objectType !== undefined
      ? objectVectors(env, query.embedModel).query(query.vector, { ...options, filter: { ...pushed, [OBJECT_TYPE_KEY]: query.objectType } })
      : query.anyObject
        ? objectVectors(env, query.embedModel).query(query.vector, options)
        : [],
  ]);
  return [
    ...wholeImages.map((match) => ({ imageId: imageIdOfVector(match.id), score: match.score, fromObject: false })),
    ...objects.map((match) => ({ imageId: imageIdOfVector(match.id), score: match.score, fromObject: true })),
  ];
}

/** A whole-image match counts for an object query only where the catalog image has no detected object. */
const admissible = (candidate: Candidate, image: ImageSummary, query: SimilarQuery): boolean =>
  query.objectType === undefined || candidate.fromObject || image.object_count === 0;

/** Float32 scores of identical images may differ in their last bits. */
const SAME_SCORE = 1e-6;

/**
 * Spec 4.8: `dedup_score_threshold` is the least gap between adjacent results, so a result whose score is within it
 * of the result kept before it is taken for a copy of that one and dropped; at the default 0, identical images.
 */
function dedup(ranked: Ranked[], threshold: number): Ranked[] {
  const kept: Ranked[] = [];
  for (const entry of ranked) {
    const previous = kept.at(-1);
    if (previous === undefined || previous.score - entry.score > threshold + SAME_SCORE) kept.push(entry);
  }
  return kept;
}

const compareBy = (field: string, direction: 'asc' | 'desc') => (a: Ranked, b: Ranked): number => {
  const left = fieldValue(a.image.metadata, field);
  const right = fieldValue(b.image.metadata, field);
  if (left === undefined || right === undefined) return left === right ? 0 : left === undefined ? 1 : -1; // missing last
  const order = left < right ? -1 : left > right ? 1 : 0;
  return direction === 'asc' ? order : -order;
};

/** The metadata fields ranking reads of every candidate: the filter's, the facets', the group's and the sort's. */
function rankingFields(options: SearchOptions): string[] {
  return [
    ...new Set([
      ...options.filter.conditions.map((condition) => condition.field),
      ...(options.facets?.fields.map((field) => field.name) ?? []),
      ...(options.groupBy ? [options.groupBy.field] : []),
      ...(options.sortBy ? [options.sortBy.field] : []),
    ]),
  ];
}

/**
 * The `value_map` fields of the images shown, by id: read for the page alone, unless ranking read them already, so
 * that `fl` costs what the page answers and not what the candidates hold.
 */
async function valueMapMetadata(env: Env, appId: string, shown: Ranked[], fields: string[] | null, read: readonly string[]): Promise<Map<number, ImageMetadata>> {
  if (!fields || fields.every((field) => read.includes(field))) return new Map(shown.map(({ image }) => [image.id, image.metadata]));
  const images = await getImagesByIds(env.DB, appId, shown.map(({ image }) => image.id), fields);
  return new Map([...images].map(([id, image]) => [id, image.metadata]));
}

/**
 * The search pipeline: nearest vectors, joined with D1 so that removed images and other applications' vectors never
 * show, each image once with its best score, then the advanced parameters (spec 4.8): filter, score range, dedup,
 * facets over the top 1000, grouping or paging, and sorting within the page. Candidates carry only the metadata
 * ranking reads; `value_map` is read for the images shown.
 */
export async function searchSimilar(env: Env, query: SimilarQuery, options: SearchOptions): Promise<SearchPage> {
  const excluded = new Set(query.excludeIds ?? []);
  const found = (await candidates(env, query, options, Math.min(MAX_RESULTS + excluded.size, imageVectors(env, query.embedModel).maxTopK))).filter(
    (candidate) => !excluded.has(candidate.imageId),
  );
  const read = rankingFields(options);
  const images = await getImagesByIds(env.DB, query.appId, [...new Set(found.map((candidate) => candidate.imageId))], read);

  const best = new Map<number, Ranked>();
  for (const candidate of found) {
    const image = images.get(candidate.imageId);
    if (!image || !admissible(candidate, image, query) || !matches(options.filter, image.metadata)) continue;
    if ((best.get(image.id)?.score ?? -Infinity) < candidate.score) best.set(image.id, { image, score: candidate.score });
  }
  // An image's score is its best match's (its whole picture's or an object's): the score range is held to that.
  const inRange = ({ score }: Ranked) => toScore(score) >= options.scoreRange.min && toScore(score) <= options.scoreRange.max;
  let ranked = [...best.values()].filter(inRange).sort((a, b) => b.score - a.score || a.image.id - b.image.id).slice(0, MAX_RESULTS);
  if (options.dedup) ranked = dedup(ranked, options.dedup.threshold);

  const sortPage = (page: Ranked[]): Ranked[] =>
    options.sortBy ? [...page].sort(compareBy(options.sortBy.field, options.sortBy.direction)) : page;
  const { page, limit } = options.paging;
  const facets = options.facets ? { facets: facetsOf(ranked.map(({ image }) => image.metadata), options.facets) } : {};
  const item = (shownMetadata: Map<number, ImageMetadata>) => ({ image, score }: Ranked): ResultItem => ({
    im_name: image.im_name,
    ...(options.withScore ? { score: toScore(score) } : {}),
    ...(options.fields ? { value_map: toValueMap(shownMetadata.get(image.id) ?? {}, options.fields) } : {}),
  });

  if (options.groupBy) {
    const { field, limit: groupLimit } = options.groupBy;
    const groups = new Map<string, Ranked[]>();
    for (const entry of ranked) {
      const value = fieldValue(entry.image.metadata, field);
      if (value === undefined) continue;
      const group = groups.get(String(value)) ?? [];
      group.push(entry);
      groups.set(String(value), group);
    }
    const shown = [...groups].slice((page - 1) * groupLimit, page * groupLimit).map(([value, members]) => [value, sortPage(members.slice(0, limit))] as const);
    const metadata = await valueMapMetadata(env, query.appId, shown.flatMap(([, members]) => members), options.fields, read);
    return {
      total: ranked.length,
      group_by_key: field,
      group_limit: groupLimit,
      group_results: shown.map(([value, members]) => ({ group_by_value: value, result: members.map(item(metadata)) })),
      ...facets,
    };
  }
  const start = (page - 1) * limit;
  const shown = sortPage(ranked.slice(start, start + limit));
  const metadata = await valueMapMetadata(env, query.appId, shown, options.fields, read);
  return { total: ranked.length, result: shown.map(item(metadata)), ...facets };
}
