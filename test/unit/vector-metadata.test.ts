import { describe, expect, it } from 'vitest';
import { parseFilters } from '../../src/filter';
import { indexFilter } from '../../src/search/plan';
import type { SchemaField } from '../../src/storage/apps';
import { canPushDown, parseMetadataIndexes } from '../../src/storage/vector-metadata';

const SCHEMA: SchemaField[] = [
  { name: 'tag', type: 'text', searchable: true },
  { name: 'brand', type: 'string', searchable: true },
  { name: 'count', type: 'int', searchable: true },
  { name: 'price', type: 'float', searchable: true },
];
const filter = (...fq: string[]) => parseFilters(fq, SCHEMA, { textDefaultOperator: 'AND' });
const ALL_CARRIED = new Set(SCHEMA.map((field) => field.name));

describe('VECTOR_METADATA_INDEXES: which fields filters push down to the vector index', () => {
  it('reads "*", nothing, or field:kind pairs', () => {
    expect(parseMetadataIndexes('*')).toEqual({ all: true });
    expect(parseMetadataIndexes('')).toEqual({ all: false, fields: new Map() });
    expect(parseMetadataIndexes(' brand:string , price : number')).toEqual({
      all: false,
      fields: new Map([
        ['brand', 'string'],
        ['price', 'number'],
      ]),
    });
  });

  it('refuses a bad entry, a repeated field, and more than Vectorize allows beside the object type', () => {
    for (const bad of ['brand', 'brand:text', 'brand:string:x', 'bad name:string', 'brand:string,brand:number', 'x'.repeat(49) + ':string']) {
      expect(() => parseMetadataIndexes(bad), bad).toThrow(/VECTOR_METADATA_INDEXES/);
    }
    const nine = Array.from({ length: 9 }, (_, i) => `f${i}:string`).join(',');
    expect(() => parseMetadataIndexes(nine)).not.toThrow();
    expect(() => parseMetadataIndexes(`${nine},f9:number`)).toThrow(/10 metadata indexes/);
  });

  it('pushes down only indexed fields of the matching kind; the rest is left to the exact check after the query', () => {
    const indexes = parseMetadataIndexes('brand:string, count:string');
    expect(canPushDown(indexes, 'brand', 'string')).toBe(true);
    expect(canPushDown(indexes, 'count', 'number')).toBe(false);
    expect(indexFilter(filter('brand:nike', 'count:1,10', 'price:5', 'tag:red'), indexes, ALL_CARRIED)).toEqual({ m_brand: { $eq: 'nike' } });
    expect(indexFilter(filter('price:5'), indexes, ALL_CARRIED)).toBeUndefined();
    expect(indexFilter(filter('brand:nike', 'count:1,10', 'price:5', 'tag:red'), parseMetadataIndexes('*'), ALL_CARRIED)).toEqual({
      m_brand: { $eq: 'nike' },
      m_count: { $gte: 1, $lte: 10 },
      m_price: { $eq: 5 },
    });
    const prototypeNamed = parseFilters(['__proto__:red'], [{ name: '__proto__', type: 'string', searchable: true }], { textDefaultOperator: 'AND' });
    expect(indexFilter(prototypeNamed, parseMetadataIndexes('*'), new Set(['__proto__']))).toEqual({ m___proto__: { $eq: 'red' } });
    // A field some vectors do not carry yet (made searchable after they were written) is left to the exact check.
    expect(indexFilter(filter('brand:nike', 'price:5'), parseMetadataIndexes('*'), new Set(['price']))).toEqual({ m_price: { $eq: 5 } });
  });
});
