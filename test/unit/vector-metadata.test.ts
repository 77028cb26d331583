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

  it("keeps the pushed filter within Vectorize's 2048 bytes as the index receives it: prefixed keys, and the object type beside them", () => {
    const schema: SchemaField[] = [
      { name: 'brand', type: 'string', searchable: true },
      { name: 'maker', type: 'string', searchable: true },
    ];
    const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).byteLength;
    const names = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
    const brands = names('b', 200);
    // Makers, the last one padded so that both fields together take exactly 2048 bytes under their own names.
    const makers = names('m', 20);
    const plain = () => ({ brand: { $in: brands }, maker: { $in: makers } });
    while (bytes(plain()) < 2048) makers[makers.length - 1] += 'x';
    expect(bytes(plain())).toBe(2048);
    const fq = [`brand:${brands.join(' OR ')}`, `maker:${makers.join(' OR ')}`];
    const parsed = parseFilters(fq, schema, { textDefaultOperator: 'AND' });
    const carried = new Set(['brand', 'maker']);
    const all = parseMetadataIndexes('*');
    // As the index receives it (m_brand, m_maker) it would take 2052 bytes: the second field is left to the exact check.
    const pushed = indexFilter(parsed, all, carried);
    expect(pushed).toEqual({ m_brand: { $in: brands } });
    // An object query adds its type beside the pushed fields, and what is pushed still fits with it.
    const withType = indexFilter(parseFilters([fq[0]!], schema, { textDefaultOperator: 'AND' }), all, carried, 'Indian Ethnic Wear');
    expect(bytes({ ...withType, type: 'Indian Ethnic Wear' })).toBeLessThanOrEqual(2048);
    // Both fields, 2040 bytes as the index receives them: an image query pushes both, an object query only what fits
    // beside its type.
    makers.splice(0, makers.length, ...names('m', 20));
    const prefixed = () => ({ m_brand: { $in: brands }, m_maker: { $in: makers } });
    while (bytes(prefixed()) < 2040) makers[makers.length - 1] += 'x';
    const both = parseFilters([`brand:${brands.join(' OR ')}`, `maker:${makers.join(' OR ')}`], schema, { textDefaultOperator: 'AND' });
    expect(indexFilter(both, all, carried)).toEqual(prefixed());
    expect(indexFilter(both, all, carried, 'Indian Ethnic Wear')).toEqual({ m_brand: { $in: brands } });
  });
});
