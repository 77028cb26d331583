import { FilterError, parseFilters, type Filter } from '../filter';
import { invalidParameter } from '../http/envelope';
import type { RequestParams } from '../http/params';
import type { AppRecord, SchemaField } from '../storage/apps';
import { readPaging, type Paging } from './paging';
import { requestedFields } from './value-map';

export type SortBy = { field: string; direction: 'asc' | 'desc' };

/** Every advanced parameter of spec 4.8, read and checked once for all search endpoints. */
export type SearchOptions = {
  paging: Paging;
  withScore: boolean;
  /** Metadata fields for `value_map`; null for none. */
  fields: string[] | null;
  filter: Filter;
  scoreRange: { min: number; max: number };
  /** Results closer than `threshold` (1 − cosine of their own vectors) to a better one are dropped. */
  dedup: { threshold: number } | null;
  facets: { fields: SchemaField[]; limit: number; showCount: boolean } | null;
  groupBy: { field: string; limit: number } | null;
  sortBy: SortBy | null;
  qinfo: boolean;
};

/** Spec 4.8 defaults and caps. */
export const FACETS_LIMIT = { default: 10, min: 1, max: 1000 } as const;
export const GROUP_LIMIT = { default: 10, min: 1, max: 100 } as const;

function unitInterval(params: RequestParams, name: string, fallback: number): number {
  const raw = params.string(name);
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/.test(raw) || value < 0 || value > 1) {
    throw invalidParameter(`${name} must be between 0.0 and 1.0.`);
  }
  return value;
}

const searchable = (schema: SchemaField[]): SchemaField[] => schema.filter((field) => field.searchable && field.type !== 'text');

function readFacets(params: RequestParams, schema: SchemaField[]): SearchOptions['facets'] {
  const names = params.strings('facets').flatMap((value) => value.split(',')).map((name) => name.trim()).filter(Boolean);
  if (names.length === 0) return null;
  const fields = names.includes('*') ? searchable(schema) : schema.filter((field) => field.type !== 'text' && names.includes(field.name));
  return { fields, limit: params.integer('facets_limit', FACETS_LIMIT), showCount: params.boolean('facets_show_count', false) };
}

function readGroupBy(params: RequestParams, schema: SchemaField[], allowed: boolean): SearchOptions['groupBy'] {
  const field = params.string('group_by');
  if (field === undefined || field === '') return null;
  if (!allowed) throw invalidParameter('group_by is not supported here.');
  if (!searchable(schema).some((candidate) => candidate.name === field)) {
    throw invalidParameter(`group_by field ${field} must be a searchable string, int or float field.`);
  }
  return { field, limit: params.integer('group_limit', GROUP_LIMIT) };
}

function readSortBy(params: RequestParams, schema: SchemaField[]): SortBy | null {
  const raw = params.string('sort_by');
  if (raw === undefined || raw === '') return null;
  const match = /^(.+):(asc|desc)$/i.exec(raw.trim());
  if (!match) throw invalidParameter('sort_by must be <field>:asc or <field>:desc.');
  const field = match[1]!;
  // A field outside the schema is ignored, as for fq and fl (spec 4.8); text fields hold no sortable value.
  if (!schema.some((candidate) => candidate.name === field && candidate.type !== 'text')) return null;
  return { field, direction: match[2]!.toLowerCase() as SortBy['direction'] };
}

export function readSearchOptions(
  params: RequestParams,
  schema: SchemaField[],
  app: AppRecord,
  endpoint: { limitName: string; allowGroupBy: boolean },
): SearchOptions {
  const scoreRange = { min: unitInterval(params, 'score_min', 0), max: unitInterval(params, 'score_max', 1) };
  if (scoreRange.min > scoreRange.max) throw invalidParameter('score_min must not be greater than score_max.');
  let filter: Filter;
  try {
    filter = parseFilters(params.strings('fq'), schema, { textDefaultOperator: app.textDefaultOperator });
  } catch (error) {
    if (error instanceof FilterError) throw invalidParameter(error.message);
    throw error;
  }
  return {
    paging: readPaging(params, endpoint.limitName),
    withScore: params.boolean('score', false),
    fields: requestedFields(params, schema),
    filter,
    scoreRange,
    dedup: params.boolean('dedup', false) ? { threshold: unitInterval(params, 'dedup_score_threshold', 0) } : null,
    facets: readFacets(params, schema),
    groupBy: readGroupBy(params, schema, endpoint.allowGroupBy),
    sortBy: readSortBy(params, schema),
    qinfo: params.boolean('qinfo', false),
  };
}
