import { VECTORIZE_LIMITS } from '../../vectorize-limits';
import { FILTER_OPERATORS, type VectorFilter, type VectorMetadata, type VectorQuery, type VectorRecord } from './types';

/* Every adapter that stands in for Vectorize enforces its limits, so code that works locally does not break on Cloudflare. */

export class VectorLimitError extends Error {
  override name = 'VectorLimitError';
}

const byteLength = (text: string): number => new TextEncoder().encode(text).byteLength;

/** What a vector's metadata weighs against maxMetadataBytes: its JSON in UTF-8. */
export const metadataBytes = (metadata: VectorMetadata): number => byteLength(JSON.stringify(metadata));

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new VectorLimitError(message);
}

export function checkRecords(records: VectorRecord[], dimensions: number | undefined): void {
  check(records.length <= VECTORIZE_LIMITS.maxUpsertBatch, `at most ${VECTORIZE_LIMITS.maxUpsertBatch} vectors per upsert`);
  for (const record of records) {
    check(record.id.length > 0 && byteLength(record.id) <= VECTORIZE_LIMITS.maxIdBytes, `vector id too long: ${record.id}`);
    check(record.values.length <= VECTORIZE_LIMITS.maxDimensions, `more than ${VECTORIZE_LIMITS.maxDimensions} dimensions`);
    check(dimensions === undefined || record.values.length === dimensions, `vector has ${record.values.length} dimensions, the index ${dimensions}`);
    check(record.values.every(Number.isFinite), 'vector values must be finite numbers');
    if (record.namespace !== undefined) checkNamespace(record.namespace);
    if (record.metadata) checkMetadata(record.metadata);
  }
}

function checkNamespace(namespace: string): void {
  check(byteLength(namespace) <= VECTORIZE_LIMITS.maxNamespaceBytes, `namespace too long: ${namespace}`);
}

function checkMetadata(metadata: VectorMetadata): void {
  check(metadataBytes(metadata) <= VECTORIZE_LIMITS.maxMetadataBytes, 'metadata over 10 KiB');
}

export function checkQuery(query: VectorQuery, vector: number[], dimensions: number | undefined): void {
  const cap = query.returnValues || query.returnMetadata ? VECTORIZE_LIMITS.maxTopKWithValuesOrMetadata : VECTORIZE_LIMITS.maxTopK;
  check(Number.isInteger(query.topK) && query.topK >= 1 && query.topK <= cap, `topK must be 1 to ${cap}`);
  check(dimensions === undefined || vector.length === dimensions, `query has ${vector.length} dimensions, the index ${dimensions}`);
  if (query.namespace !== undefined) checkNamespace(query.namespace);
  if (query.filter) checkFilter(query.filter);
}

function checkFilter(filter: VectorFilter): void {
  check(byteLength(JSON.stringify(filter)) <= VECTORIZE_LIMITS.maxFilterBytes, 'filter over 2048 bytes');
  for (const condition of Object.values(filter)) {
    if (typeof condition !== 'object') continue;
    for (const [operator, operand] of Object.entries(condition)) {
      check((FILTER_OPERATORS as readonly string[]).includes(operator), `unsupported filter operator ${operator}`);
      const takesList = operator === '$in' || operator === '$nin';
      check(Array.isArray(operand) === takesList, `${operator} takes ${takesList ? 'a list' : 'one value'}`);
    }
  }
}
