import { pushDown, type Condition, type Filter, type IndexFilter } from '../filter';
import type { VectorFilter } from '../ports/vector-index/types';
import { canPushDown, OBJECT_TYPE_KEY, vectorMetadataKey, type MetadataIndexes, type MetadataIndexKind } from '../storage/vector-metadata';
import type { SearchOptions, SortBy } from './options';
import { MAX_RESULTS } from './paging';

/**
 * A search as every search endpoint asks it (search, uploadsearch and discoversearch, colorsearch, textsearch): what
 * is searched, with what, and which images never come back.
 */
export type SearchRequest = SearchedApp & {
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

/** The application searched, as far as its vectors go. */
export type SearchedApp = {
  appId: string;
  /** The D1 binding its catalog is in (storage/databases.ts). */
  database: string;
  /** The application's embedding model: whose indexes a visual query searches. */
  embedModel: string;
  /**
   * Its tuning (docs/decisions.md, "Tuning on a label field"): a visual query vector, as the model made it, is
   * projected by it and searches the model's tuned indexes; null: untuned.
   */
  tuning: number | null;
};

export const searchedApp = (app: { id: string; database: string; embedModel: string; tuning: number | null }): SearchedApp => ({
  appId: app.id,
  database: app.database,
  embedModel: app.embedModel,
  tuning: app.tuning,
});

/** What planning needs to know of the deployment, read by the executor (search/execute.ts). */
export type IndexFacts = {
  /** The largest topK one query of the application's indexes may ask for (ports/vector-index/sharded.ts). */
  maxTopK: number;
  /** Which metadata the indexes filter on (`VECTOR_METADATA_INDEXES`, storage/vector-metadata.ts). */
  metadataIndexes: MetadataIndexes;
};

/** One nearest-vector query: the model's whole-image or object index, or the colour index (storage/vectors.ts). */
export type IndexQuery = { index: 'images' | 'objects' | 'colors'; filter: VectorFilter | undefined };

/** Which ranked results the page shows: a slice of them, or a slice of their groups, each cut to `limit` members. */
export type PageSlice =
  | { kind: 'results'; offset: number; limit: number }
  | { kind: 'groups'; field: string; offset: number; groups: number; limit: number };

/** A search decided before anything is read (qdrant's PlannedQuery): run by search/execute.ts, answered by search/answer.ts. */
export type SearchPlan = {
  appId: string;
  database: string;
  embedModel: string;
  /** The visual indexes searched are the model's tuned ones, and `vector` is projected by this tuning before. */
  tuning: number | null;
  vector: number[];
  /** topK of every index query: one depth for every page, so that `total` and ranks agree across pages. */
  depth: number;
  queries: IndexQuery[];
  excludeIds: number[];
  /** Metadata read from D1 for every candidate: the fields the filter, the facets, the groups and the sort read. */
  readFields: string[];
  /**
   * Checked exactly on D1's metadata after the join: the whole filter, the part the index applied too, since the
   * index's metadata may lag D1's (Vectorize applies writes asynchronously) and some vectors carry no field yet.
   */
  filter: Filter;
  /** With an object type, a whole-image match counts only where the catalog image has no detected object. */
  wholeImagesWithoutObjectsOnly: boolean;
  scoreRange: { min: number; max: number };
  /** A result whose score is within `threshold` of the one kept before it is dropped (docs/api.md, Advanced parameters). */
  dedup: { threshold: number } | null;
  facets: SearchOptions['facets'];
  page: PageSlice;
  /** How each page (or group) is ordered, after it is cut from the ranking. */
  sortBy: SortBy | null;
  withScore: boolean;
  /** `value_map`'s fields, and whether they are read again for the images shown (fields ranking read are not). */
  valueMap: { fields: string[]; readForPage: boolean } | null;
};

const indexKind = (condition: Condition): MetadataIndexKind | undefined =>
  condition.kind === 'string' ? 'string' : condition.kind === 'number' || condition.kind === 'range' ? 'number' : undefined;

/**
 * The part of the filter the vector index applies itself (equality, `in` and ranges on fields with a metadata
 * index of the condition's kind, carried by every vector), so that a filtered query still fills its depth with
 * matching images; the one place that decides what is pushed down. Every filter is checked exactly again after the query.
 */
export function indexFilter(filter: Filter, indexes: MetadataIndexes, carriedFields: ReadonlySet<string>, objectType?: string): IndexFilter | undefined {
  const conditions = filter.conditions.filter((condition) => {
    const kind = indexKind(condition);
    return kind !== undefined && carriedFields.has(condition.field) && canPushDown(indexes, condition.field, kind);
  });
  const alongside = objectType === undefined ? undefined : { [OBJECT_TYPE_KEY]: objectType };
  return pushDown({ conditions, ignoredFields: [] }, { keyOf: (field) => vectorMetadataKey(field)!, ...(alongside && { alongside }) }).vectorFilter;
}

function indexQueries(request: SearchRequest, pushed: IndexFilter | undefined): IndexQuery[] {
  if (request.space === 'color') return [{ index: 'colors', filter: pushed }];
  const objects: IndexQuery[] =
    request.objectType !== undefined
      ? [{ index: 'objects', filter: { ...pushed, [OBJECT_TYPE_KEY]: request.objectType } }]
      : request.anyObject
        ? [{ index: 'objects', filter: pushed }]
        : [];
  return [{ index: 'images', filter: pushed }, ...objects];
}

/** The metadata fields ranking reads of every candidate: the filter's, the facets', the group's and the sort's. */
const rankingFields = (options: SearchOptions): string[] => [
  ...new Set([
    ...options.filter.conditions.map((condition) => condition.field),
    ...(options.facets?.fields.map((field) => field.name) ?? []),
    ...(options.groupBy ? [options.groupBy.field] : []),
    ...(options.sortBy ? [options.sortBy.field] : []),
  ]),
];

function pageSlice({ paging, groupBy }: SearchOptions): PageSlice {
  const { page, limit } = paging;
  // With group_by a page holds `group_limit` groups, each of at most `limit` results.
  if (groupBy) return { kind: 'groups', field: groupBy.field, offset: (page - 1) * groupBy.limit, groups: groupBy.limit, limit };
  return { kind: 'results', offset: (page - 1) * limit, limit };
}

/**
 * The plan of a search: the nearest vectors as deep as the 1000 results allowed (docs/api.md, Limits) and one more
 * for each excluded image, the filter the indexes apply, then the exact checks, ranking and page of the advanced
 * parameters. Pure: the request, its options and the deployment's facts in, a plain object out.
 */
export function planSearch(request: SearchRequest, options: SearchOptions, facts: IndexFacts): SearchPlan {
  const excludeIds = [...new Set(request.excludeIds ?? [])];
  const readFields = rankingFields(options);
  const { fields } = options;
  return {
    appId: request.appId,
    database: request.database,
    embedModel: request.embedModel,
    tuning: request.space === 'visual' ? request.tuning : null,
    vector: request.vector,
    depth: Math.min(MAX_RESULTS + excludeIds.length, facts.maxTopK),
    queries: indexQueries(request, indexFilter(options.filter, facts.metadataIndexes, options.carriedFields, request.objectType)),
    excludeIds,
    readFields,
    filter: options.filter,
    wholeImagesWithoutObjectsOnly: request.objectType !== undefined,
    scoreRange: options.scoreRange,
    dedup: options.dedup,
    facets: options.facets,
    page: pageSlice(options),
    sortBy: options.sortBy,
    withScore: options.withScore,
    valueMap: fields ? { fields, readForPage: !fields.every((field) => readFields.includes(field)) } : null,
  };
}
