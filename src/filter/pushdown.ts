import { VECTORIZE_LIMITS } from '../vectorize-limits';
import type { Condition, Filter } from './types';

/**
 * The part of a filter Vectorize can apply itself (its metadata filter is an AND of per-field operators):
 * a string value → `$eq`, several string values → `$in`, an exact number → `$eq`, a range → `$gte` + `$lte`.
 * Text conditions never go down. Conditions are pushed in order while the JSON filter stays within Vectorize's
 * 2048-byte limit, measured as the index receives it (its keys, and the conditions the query adds beside them); one
 * that would overflow it stays behind.
 *
 * `vectorFilter` holds for every image the filter matches (given the vectors carry the same metadata values), and
 * `matches(filter, m)` equals `vectorFilter(m) && matches(residual, m)`.
 */
export type PushDown = { vectorFilter: IndexFilter | undefined; residual: Filter };

/** One field's operators in Vectorize's metadata filter, as a condition pushes them. */
type IndexCondition = { $eq: string | number } | { $in: string[] } | { $gte: number; $lte: number };
/** Vectorize's metadata filter (fields ANDed), as the vector index port's `VectorFilter` takes it. */
export type IndexFilter = Record<string, IndexCondition>;

const vectorCondition = (condition: Condition): IndexCondition | undefined => {
  switch (condition.kind) {
    case 'string':
      return condition.values.length === 1 ? { $eq: condition.values[0]! } : { $in: condition.values };
    case 'number':
      return { $eq: condition.value };
    case 'range':
      return { $gte: condition.min, $lte: condition.max };
    case 'text':
      return undefined;
  }
};

const byteLength = (text: string): number => new TextEncoder().encode(text).byteLength;

export type PushDownOptions = {
  /** The index's key of a field (its vector metadata key); the field's name by default. */
  keyOf?: (field: string) => string;
  /** What the query filters on beside the pushed conditions (an object type): it counts toward the limit. */
  alongside?: Readonly<Record<string, unknown>>;
};

export function pushDown(filter: Filter, options: PushDownOptions = {}): PushDown {
  const keyOf = options.keyOf ?? ((field: string) => field);
  const alongside = Object.entries(options.alongside ?? {});
  // Entries, made into an object at the end: a field may be named `__proto__`, which an assignment would not add.
  const pushedSoFar: [string, IndexCondition][] = [];
  const residual: Condition[] = [];
  for (const condition of filter.conditions) {
    const pushed = vectorCondition(condition);
    if (pushed !== undefined) {
      const entry: [string, IndexCondition] = [keyOf(condition.field), pushed];
      if (byteLength(JSON.stringify(Object.fromEntries([...alongside, ...pushedSoFar, entry]))) <= VECTORIZE_LIMITS.maxFilterBytes) {
        pushedSoFar.push(entry);
        continue;
      }
    }
    residual.push(condition);
  }
  return {
    vectorFilter: pushedSoFar.length > 0 ? Object.fromEntries(pushedSoFar) : undefined,
    residual: { conditions: residual, ignoredFields: filter.ignoredFields },
  };
}

/** The Vectorize metadata filter for the part of `filter` it can apply, or undefined when there is none. */
export const toVectorFilter = (filter: Filter): IndexFilter | undefined => pushDown(filter).vectorFilter;

/** Whether Vectorize's filter alone decides the whole filter, so no image needs checking afterwards. */
export const isFullyPushedDown = (filter: Filter): boolean => pushDown(filter).residual.conditions.length === 0;
