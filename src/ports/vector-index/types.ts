/**
 * The vector index port: the operations the search code needs, shaped after Cloudflare Vectorize so that its
 * adapter is a thin mapping. Ids are unique across the whole index (not per namespace), as in Vectorize.
 */

export type MetadataValue = string | number | boolean;
export type VectorMetadata = Record<string, MetadataValue>;

export type VectorRecord = {
  id: string;
  values: number[];
  namespace?: string;
  metadata?: VectorMetadata;
};

export const FILTER_OPERATORS = ['$eq', '$ne', '$in', '$nin', '$lt', '$lte', '$gt', '$gte'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
/** Vectorize's metadata filter: fields ANDed, each an implicit `$eq` value or an object of operators. */
export type VectorFilter = Record<string, MetadataValue | Partial<Record<FilterOperator, MetadataValue | MetadataValue[]>>>;

export type VectorQuery = {
  topK: number;
  namespace?: string;
  filter?: VectorFilter;
  returnValues?: boolean;
  returnMetadata?: boolean;
};

/** `score` is the cosine similarity, -1 to 1. */
export type VectorMatch = { id: string; score: number; values?: number[]; metadata?: VectorMetadata };

export interface VectorIndex {
  /** The largest topK one query may ask for. */
  readonly maxTopK: number;
  upsert(records: VectorRecord[]): Promise<void>;
  query(vector: number[], query: VectorQuery): Promise<VectorMatch[]>;
  getByIds(ids: string[]): Promise<VectorRecord[]>;
  deleteByIds(ids: string[]): Promise<void>;
  /** The vectors the index holds, in every namespace (Vectorize's describe()): placement counts by it. */
  countVectors(): Promise<number>;
}
