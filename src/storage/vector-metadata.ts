/**
 * Which metadata the vector indexes can filter on. Vectorize filters only on properties with a metadata index,
 * created before vectors are written and at most 10 per index, so the fields that filters push down are a
 * deployment setting (`VECTOR_METADATA_INDEXES`) shared by the Worker and `scripts/setup-vectorize.ts`. A filter
 * on any other field is applied after the query. No value imports here: the Node script loads this file too.
 */

/** Kinds of metadata index: string fields take `$eq`/`$in`, int and float fields `$eq` and ranges. */
export type MetadataIndexKind = 'string' | 'number';

/** Which fields the indexes filter on; `all` for an index that filters on any property (the local one). */
export type MetadataIndexes = { readonly all: true } | { readonly all: false; readonly fields: ReadonlyMap<string, MetadataIndexKind> };

/** The object index's product type, filtered on by every object query: one of each index's 10 metadata indexes. */
export const OBJECT_TYPE_KEY = 'type';
/** Vectorize's cap on metadata indexes per index. */
export const MAX_METADATA_INDEXES = 10;

/** Metadata keys in vectors: prefixed, so a field named `type` cannot meet the object type. */
const METADATA_KEY = /^[A-Za-z0-9_-]{1,48}$/;
export const vectorMetadataKey = (field: string): string | undefined => (METADATA_KEY.test(field) ? `m_${field}` : undefined);

/** Whether vectors carry a field's values (storage/vectors.ts): searchable, not text, and named as a metadata key may be. */
export const isCarriedByVectors = (field: { name: string; type: string; searchable: boolean }): boolean =>
  field.searchable && field.type !== 'text' && vectorMetadataKey(field.name) !== undefined;

/**
 * Reads `VECTOR_METADATA_INDEXES`: `*` (every field), empty (none), or `field:kind` pairs separated by commas,
 * e.g. `brand:string, price:number`. Throws on anything else, naming the bad entry.
 */
export function parseMetadataIndexes(setting: string): MetadataIndexes {
  if (setting.trim() === '*') return { all: true };
  const fields = new Map<string, MetadataIndexKind>();
  for (const entry of setting.split(',').map((part) => part.trim()).filter(Boolean)) {
    const [field = '', kind, ...rest] = entry.split(':').map((part) => part.trim());
    if (vectorMetadataKey(field) === undefined || (kind !== 'string' && kind !== 'number') || rest.length > 0 || fields.has(field)) {
      throw new Error(`VECTOR_METADATA_INDEXES: "${entry}" is not field:string or field:number (field names: letters, digits, _ and -, at most 48, each once)`);
    }
    fields.set(field, kind);
  }
  // The object index needs one more for the product type.
  if (fields.size > MAX_METADATA_INDEXES - 1) {
    throw new Error(`VECTOR_METADATA_INDEXES: ${fields.size} fields; Vectorize allows ${MAX_METADATA_INDEXES} metadata indexes per index, one of them the object type`);
  }
  return { all: false, fields };
}

const parsedIndexes = new Map<string, MetadataIndexes>();

/** The Worker's `VECTOR_METADATA_INDEXES`, read once per isolate for each value the setting takes. */
export function metadataIndexes(env: { VECTOR_METADATA_INDEXES: string }): MetadataIndexes {
  let indexes = parsedIndexes.get(env.VECTOR_METADATA_INDEXES);
  if (!indexes) {
    indexes = parseMetadataIndexes(env.VECTOR_METADATA_INDEXES);
    parsedIndexes.set(env.VECTOR_METADATA_INDEXES, indexes);
  }
  return indexes;
}

/** Whether the index has a metadata index of this kind on `field` (search/plan.ts decides what a query pushes down). */
export function canPushDown(indexes: MetadataIndexes, field: string, kind: MetadataIndexKind): boolean {
  if (vectorMetadataKey(field) === undefined) return false;
  return indexes.all || indexes.fields.get(field) === kind;
}
