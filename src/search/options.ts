import { FilterError, parseFilters, type Filter } from '../filter';
import { invalidParameter } from '../http/envelope';
import { readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import type { AppRecord, SchemaField, StoredField } from '../storage/apps';
import { ADVANCED } from './advanced';
import { readPaging, type Paging } from './paging';
import { requestedFields } from './value-map';

export type SortBy = { field: string; direction: 'asc' | 'desc' };

/** Every advanced parameter (docs/api.md, Advanced parameters), read and checked once for all search endpoints. */
export type SearchOptions = {
  paging: Paging;
  withScore: boolean;
  /** Metadata fields for `value_map`; null for none. */
  fields: string[] | null;
  filter: Filter;
  /** Fields every vector carries (StoredField): only conditions on them may be applied by the vector index. */
  carriedFields: ReadonlySet<string>;
  scoreRange: { min: number; max: number };
  /** A result whose score is within `threshold` of the one kept before it is dropped. */
  dedup: { threshold: number } | null;
  facets: { fields: SchemaField[]; limit: number; showCount: boolean } | null;
  groupBy: { field: string; limit: number } | null;
  sortBy: SortBy | null;
  qinfo: boolean;
};

const searchable = (schema: SchemaField[]): SchemaField[] => schema.filter((field) => field.searchable && field.type !== 'text');

function readFacets(params: RequestParams, schema: SchemaField[]): SearchOptions['facets'] {
  const names = readParam(params, ADVANCED, 'facets')
    .flatMap((value) => value.split(','))
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0) return null;
  const fields = names.includes('*') ? searchable(schema) : schema.filter((field) => field.type !== 'text' && names.includes(field.name));
  return {
    fields,
    limit: readParam(params, ADVANCED, 'facets_limit'),
    showCount: readParam(params, ADVANCED, 'facets_show_count'),
  };
}

function readGroupBy(params: RequestParams, schema: SchemaField[], allowed: boolean): SearchOptions['groupBy'] {
  const field = readParam(params, ADVANCED, 'group_by');
  if (field === undefined || field === '') return null;
  if (!allowed) throw invalidParameter('group_by is not supported here.');
  // Any searchable field, text ones too (grouped by their whole value).
  if (!schema.some((candidate) => candidate.name === field && candidate.searchable)) throw invalidParameter(`group_by field ${field} must be a searchable field.`);
  return { field, limit: readParam(params, ADVANCED, 'group_limit') };
}

function readSortBy(params: RequestParams, schema: SchemaField[]): SortBy | null {
  const raw = readParam(params, ADVANCED, 'sort_by');
  if (raw === undefined || raw === '') return null;
  const match = /^(.+):(asc|desc)$/i.exec(raw.trim());
  if (!match) throw invalidParameter('sort_by must be <field>:asc or <field>:desc.');
  const field = match[1]!;
  // A field outside the schema is ignored, as for fq and fl; text fields hold no sortable value.
  if (!schema.some((candidate) => candidate.name === field && candidate.type !== 'text')) return null;
  return { field, direction: match[2]!.toLowerCase() as SortBy['direction'] };
}

export function readSearchOptions(
  params: RequestParams,
  schema: StoredField[],
  app: AppRecord,
  endpoint: { limitName: 'limit' | 'result_limit'; allowGroupBy: boolean },
): SearchOptions {
  const scoreRange = { min: readParam(params, ADVANCED, 'score_min'), max: readParam(params, ADVANCED, 'score_max') };
  if (scoreRange.min > scoreRange.max) throw invalidParameter('score_min must not be greater than score_max.');
  let filter: Filter;
  try {
    filter = parseFilters(readParam(params, ADVANCED, 'fq'), schema, { textDefaultOperator: app.textDefaultOperator });
  } catch (error) {
    if (error instanceof FilterError) throw invalidParameter(error.message);
    throw error;
  }
  return {
    paging: readPaging(params, endpoint.limitName),
    withScore: readParam(params, ADVANCED, 'score'),
    fields: requestedFields(params, schema),
    filter,
    carriedFields: new Set(schema.filter((field) => field.carried).map((field) => field.name)),
    scoreRange,
    dedup: readParam(params, ADVANCED, 'dedup')
      ? { threshold: readParam(params, ADVANCED, 'dedup_score_threshold') }
      : null,
    facets: readFacets(params, schema),
    groupBy: readGroupBy(params, schema, endpoint.allowGroupBy),
    sortBy: readSortBy(params, schema),
    qinfo: readParam(params, ADVANCED, 'qinfo'),
  };
}
