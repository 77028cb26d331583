import type { SchemaField } from '../storage/apps';
import { FilterError, excerpt } from './errors';
import { parseNumberValue } from './number-value';
import { parseStringValue } from './string-value';
import { parseTextQuery } from './text-query';
import { MAX_FQ_LENGTH, type Condition, type FilterOptions } from './types';

/** An fq parameter split at its first colon; `offset` counts the characters (code points) before the value. */
export type FqParts = { field: string; value: string; offset: number };

/**
 * Splits `<field>:<value>` at the first colon (so a field name cannot contain one); white space around the field name
 * is ignored. Parameters longer than MAX_FQ_LENGTH (2000) UTF-16 code units are refused before anything else.
 */
export function splitFq(fq: string): FqParts {
  if (fq.length > MAX_FQ_LENGTH) {
    throw new FilterError(undefined, `the parameter is ${fq.length} characters long, more than the ${MAX_FQ_LENGTH} allowed`);
  }
  const colon = fq.indexOf(':');
  if (colon < 0) throw new FilterError(undefined, `${excerpt(fq)} is not of the form <field>:<value>`);
  const field = fq.slice(0, colon).trim();
  if (field === '') throw new FilterError(undefined, `${excerpt(fq)} has no field name before the colon`);
  return { field, value: fq.slice(colon + 1), offset: Array.from(fq.slice(0, colon + 1)).length };
}

/** Parses the value of an fq on `field`, by the field's schema type. */
export function parseCondition(parts: FqParts, field: SchemaField, options: FilterOptions): Condition {
  const { value, offset } = parts;
  switch (field.type) {
    case 'string':
      return { kind: 'string', field: field.name, values: parseStringValue(field.name, value, offset) };
    case 'int':
    case 'float':
      return parseNumberValue(field.name, field.type, value);
    case 'text':
      return { kind: 'text', field: field.name, expr: parseTextQuery(field.name, value, offset, options.textDefaultOperator) };
  }
}
