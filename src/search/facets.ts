import type { SchemaField } from '../storage/apps';
import { fieldValue, type ImageMetadata } from '../storage/metadata';

/** docs/decisions.md: value counts for string fields, the range for numeric ones. */
export type Facet =
  | { key: string; items: { value: string; count?: number }[] }
  | { key: string; range: { min: number; max: number } | null };

/** Facets over the ranked results (at most the top 1000): the most frequent values first, ties by value. */
export function facetsOf(results: ImageMetadata[], request: { fields: SchemaField[]; limit: number; showCount: boolean }): Facet[] {
  return request.fields.map((field): Facet => {
    const values = results.map((metadata) => fieldValue(metadata, field.name)).filter((value) => value !== undefined);
    if (field.type === 'int' || field.type === 'float') {
      const numbers = values.map(Number);
      return { key: field.name, range: numbers.length ? { min: Math.min(...numbers), max: Math.max(...numbers) } : null };
    }
    const counts = new Map<string, number>();
    for (const value of values) counts.set(String(value), (counts.get(String(value)) ?? 0) + 1);
    const items = [...counts]
      .sort(([a, countA], [b, countB]) => countB - countA || (a < b ? -1 : 1))
      .slice(0, request.limit)
      .map(([value, count]) => (request.showCount ? { value, count } : { value }));
    return { key: field.name, items };
  });
}
