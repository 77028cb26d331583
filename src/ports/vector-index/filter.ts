import type { MetadataValue, VectorFilter, VectorMetadata } from './types';

type Operand = MetadataValue | MetadataValue[] | undefined;

function holds(operator: string, actual: MetadataValue | undefined, operand: Operand): boolean {
  switch (operator) {
    case '$eq':
      return actual === operand;
    case '$ne':
      return actual !== operand;
    case '$in':
      return Array.isArray(operand) && actual !== undefined && operand.includes(actual);
    case '$nin':
      return Array.isArray(operand) && (actual === undefined || !operand.includes(actual));
    default: {
      if (actual === undefined || operand === undefined || Array.isArray(operand) || typeof actual !== typeof operand) {
        return false;
      }
      if (operator === '$lt') return actual < operand;
      if (operator === '$lte') return actual <= operand;
      if (operator === '$gt') return actual > operand;
      return actual >= operand;
    }
  }
}

/** Vectorize's filter semantics: every field's conditions must hold (AND only). */
export function matchesFilter(metadata: VectorMetadata | undefined, filter: VectorFilter): boolean {
  return Object.entries(filter).every(([field, condition]) => {
    const actual = metadata?.[field];
    if (typeof condition !== 'object') return actual === condition;
    return Object.entries(condition).every(([operator, operand]) => holds(operator, actual, operand));
  });
}
