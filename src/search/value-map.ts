import { readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import type { SchemaField } from '../storage/apps';
import { fieldValue, type ImageMetadata } from '../storage/metadata';
import { ADVANCED } from './advanced';

/**
 * The metadata fields a search returns in `value_map`: those named by `fl`, or every fetchable one with
 * `get_all_fl=true`. Fields outside the schema are ignored, and text fields are never fetchable. Null: no value_map,
 * which is present only when these select a field (docs/api.md, Result items and detected objects).
 */
export const fetchableFields = (schema: SchemaField[]): string[] => schema.filter((field) => field.type !== 'text').map((field) => field.name);

export function requestedFields(params: RequestParams, schema: SchemaField[]): string[] | null {
  const fetchable = fetchableFields(schema);
  const named = readParam(params, ADVANCED, 'fl').flatMap((value) => value.split(',')).map((name) => name.trim());
  const selected = readParam(params, ADVANCED, 'get_all_fl') ? fetchable : fetchable.filter((name) => named.includes(name));
  return selected.length > 0 ? selected : null;
}

/** Values as strings, as the API returns them; a field the image has no value for is left out. */
export function toValueMap(metadata: ImageMetadata, fields: string[]): Record<string, string> {
  // Made as own properties, as typedMetadata makes the metadata: a field may be named `__proto__`.
  return Object.fromEntries(fields.flatMap((field) => {
    const value = fieldValue(metadata, field);
    return value === undefined ? [] : [[field, String(value)]];
  }));
}
