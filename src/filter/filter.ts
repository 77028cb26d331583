import type { SchemaField } from '../storage/apps';
import { fieldValue, type ImageMetadata } from '../storage/metadata';
import { FilterError } from './errors';
import { evaluate } from './expr';
import { parseCondition, splitFq } from './parser';
import { tokenize } from './tokens';
import type { Condition, Filter, FilterOptions } from './types';

/**
 * Parses the fq parameters of a search request (docs/api.md, The filter language) against the application's schema.
 * - A field not in the schema is ignored (4.8) and listed in `ignoredFields`; its value is not read.
 * - A field in the schema but not searchable is an error: only searchable fields can be used in fq (2.2).
 * - One fq per field (4.9): a second fq on the same field is an error (combine them with AND/OR or a list instead).
 * - Anything malformed throws a FilterError with a message for the caller; nothing else is thrown.
 */
export function parseFilters(fqValues: string[], schema: SchemaField[], options: FilterOptions): Filter {
  const fields = new Map(schema.map((field) => [field.name, field]));
  const conditions: Condition[] = [];
  // A set: a request may carry a great many fq parameters on unknown fields, and each must cost O(1).
  const ignoredFields = new Set<string>();
  for (const fq of fqValues) {
    const parts = splitFq(fq);
    const field = fields.get(parts.field);
    if (field === undefined) {
      ignoredFields.add(parts.field);
      continue;
    }
    if (!field.searchable) throw new FilterError(field.name, 'the field is not searchable, so it cannot be used in fq');
    if (conditions.some((condition) => condition.field === field.name)) {
      throw new FilterError(field.name, 'only one fq per field is allowed, and this field has more than one');
    }
    conditions.push(parseCondition(parts, field, options));
  }
  return { conditions, ignoredFields: [...ignoredFields] };
}

/**
 * Whether an image's metadata satisfies one condition. An image lacking the field does not match, whatever the
 * condition (even `NOT a`); nor does a value of the wrong kind (string and text conditions need a string, int and
 * float conditions a number). Text values are split into tokens with `tokenize`.
 */
export function matchesCondition(condition: Condition, metadata: ImageMetadata): boolean {
  const value = fieldValue(metadata, condition.field);
  switch (condition.kind) {
    case 'string':
      return typeof value === 'string' && condition.values.includes(value);
    case 'number':
      return typeof value === 'number' && value === condition.value;
    case 'range':
      return typeof value === 'number' && condition.min <= value && value <= condition.max;
    case 'text':
      return typeof value === 'string' && evaluate(condition.expr, new Set(tokenize(value)));
  }
}

/** Whether an image's metadata satisfies every condition of a filter (an empty filter matches everything). */
export const matches = (filter: Filter, metadata: ImageMetadata): boolean =>
  filter.conditions.every((condition) => matchesCondition(condition, metadata));
