import { describe, expect, it } from 'vitest';
import { RequestParams } from '../../src/http/params';
import { selectPage, shownImages, toSearchPage } from '../../src/search/answer';
import type { Candidate } from '../../src/search/execute';
import { readSearchOptions, type SearchOptions } from '../../src/search/options';
import { planSearch, type IndexFacts, type SearchRequest } from '../../src/search/plan';
import type { AppRecord, StoredField } from '../../src/storage/apps';
import { parseMetadataIndexes } from '../../src/storage/vector-metadata';

const SCHEMA: StoredField[] = [
  { name: 'tag', type: 'text', searchable: true, carried: false },
  { name: 'brand', type: 'string', searchable: true, carried: true },
  { name: 'color', type: 'string', searchable: true, carried: false },
  { name: 'price', type: 'float', searchable: true, carried: true },
];
const APP = { id: 'app1', textDefaultOperator: 'AND', embedModel: 'model-a' } as AppRecord;

/** The options a search endpoint reads from this query string. */
const optionsOf = (query: string, endpoint: { limitName: 'limit' | 'result_limit'; allowGroupBy: boolean } = { limitName: 'limit', allowGroupBy: true }): SearchOptions =>
  readSearchOptions(RequestParams.fromQuery(new Request(`http://test/search?${query}`)), SCHEMA, APP, endpoint);

/** 16 shards of Vectorize's topK 100, and metadata indexes on brand and price. */
const FACTS: IndexFacts = { maxTopK: 1600, metadataIndexes: parseMetadataIndexes('brand:string, price:number') };
const VISUAL: SearchRequest = { appId: 'app1', database: 'DB', embedModel: 'model-a', tuning: null, space: 'visual', vector: [1, 0] };

describe('search plan: what the vector indexes apply and what is checked after the join', () => {
  it("a tuned application's visual search is planned in its tuning's space; a colour search never is", () => {
    const options = optionsOf('');
    expect(planSearch({ ...VISUAL, tuning: 3 }, options, FACTS).tuning).toBe(3);
    expect(planSearch(VISUAL, options, FACTS).tuning).toBeNull();
    expect(planSearch({ ...VISUAL, tuning: 3, space: 'color' }, options, FACTS).tuning).toBeNull();
  });

  it('pushes down carried, indexed fields and checks the whole filter again after the join', () => {
    const options = optionsOf('fq=brand:nike&fq=price:1,5&fq=color:red&fq=tag:summer');
    const plan = planSearch(VISUAL, options, FACTS);
    expect(plan.queries).toEqual([{ index: 'images', filter: { m_brand: { $eq: 'nike' }, m_price: { $gte: 1, $lte: 5 } } }]);
    expect(plan.filter).toEqual(options.filter);
    expect(plan.filter.conditions.map((condition) => condition.field)).toEqual(['brand', 'price', 'color', 'tag']);
    expect(plan.readFields).toEqual(['brand', 'price', 'color', 'tag']);
  });

  it('leaves everything to the check after the join without metadata indexes, and on an index of another kind', () => {
    const options = optionsOf('fq=brand:nike&fq=price:5');
    expect(planSearch(VISUAL, options, { ...FACTS, metadataIndexes: parseMetadataIndexes('') }).queries).toEqual([{ index: 'images', filter: undefined }]);
    expect(planSearch(VISUAL, options, { ...FACTS, metadataIndexes: parseMetadataIndexes('brand:number, price:string') }).queries).toEqual([
      { index: 'images', filter: undefined },
    ]);
    expect(planSearch(VISUAL, optionsOf(''), FACTS).filter.conditions).toEqual([]);
  });

  it('a field some vectors do not carry yet is not pushed down, even with "*"', () => {
    const plan = planSearch(VISUAL, optionsOf('fq=color:red&fq=brand:nike OR puma'), { ...FACTS, metadataIndexes: parseMetadataIndexes('*') });
    expect(plan.queries).toEqual([{ index: 'images', filter: { m_brand: { $in: ['nike', 'puma'] } } }]);
  });
});

describe('search plan: which indexes a request queries', () => {
  const pushed = { m_brand: { $eq: 'nike' } };
  const options = optionsOf('fq=brand:nike');

  it('an image query: whole images only, any catalog image admitted', () => {
    const plan = planSearch(VISUAL, options, FACTS);
    expect(plan.queries).toEqual([{ index: 'images', filter: pushed }]);
    expect(plan.wholeImagesWithoutObjectsOnly).toBe(false);
  });

  it('an object query: whole images and objects of its type, whole images only of images without objects', () => {
    const plan = planSearch({ ...VISUAL, objectType: 'shoe' }, options, FACTS);
    expect(plan.queries).toEqual([
      { index: 'images', filter: pushed },
      { index: 'objects', filter: { ...pushed, type: 'shoe' } },
    ]);
    expect(plan.wholeImagesWithoutObjectsOnly).toBe(true);
    expect(planSearch({ ...VISUAL, objectType: 'shoe' }, optionsOf(''), FACTS).queries[1]).toEqual({ index: 'objects', filter: { type: 'shoe' } });
  });

  it('a text query: whole images and objects of every type alike', () => {
    const plan = planSearch({ ...VISUAL, anyObject: true }, options, FACTS);
    expect(plan.queries).toEqual([
      { index: 'images', filter: pushed },
      { index: 'objects', filter: pushed },
    ]);
    expect(plan.wholeImagesWithoutObjectsOnly).toBe(false);
  });

  it('a colour query: the colour index alone, with the same pushed filter', () => {
    const plan = planSearch({ ...VISUAL, space: 'color', vector: [0.5, 0.5] }, options, FACTS);
    expect(plan.queries).toEqual([{ index: 'colors', filter: pushed }]);
    expect(plan.vector).toEqual([0.5, 0.5]);
  });
});

describe('search plan: depth, ranking and the page', () => {
  it('queries 1000 deep whatever the page, dedup or grouping, one more per excluded image, within the index cap', () => {
    expect(planSearch(VISUAL, optionsOf(''), FACTS).depth).toBe(1000);
    for (const query of ['page=7&limit=50', 'dedup=true&dedup_score_threshold=0.1', 'group_by=brand&group_limit=3&page=2']) {
      expect(planSearch(VISUAL, optionsOf(query), FACTS).depth, query).toBe(1000);
    }
    const excluding = planSearch({ ...VISUAL, excludeIds: [7, 7, 9] }, optionsOf(''), FACTS);
    expect(excluding.depth).toBe(1002);
    expect(excluding.excludeIds).toEqual([7, 9]);
    expect(planSearch(VISUAL, optionsOf(''), { ...FACTS, maxTopK: 100 }).depth).toBe(100);
  });

  it('pages results by limit, or result_limit where the endpoint pages by it', () => {
    expect(planSearch(VISUAL, optionsOf('page=3&limit=20'), FACTS).page).toEqual({ kind: 'results', offset: 40, limit: 20 });
    expect(planSearch(VISUAL, optionsOf(''), FACTS).page).toEqual({ kind: 'results', offset: 0, limit: 10 });
    const perObject = optionsOf('page=2&limit=50&result_limit=4', { limitName: 'result_limit', allowGroupBy: false });
    expect(planSearch({ ...VISUAL, objectType: 'bag' }, perObject, FACTS).page).toEqual({ kind: 'results', offset: 4, limit: 4 });
  });

  it('pages groups by group_limit, each cut to limit results, and reads the group field of every candidate', () => {
    const plan = planSearch(VISUAL, optionsOf('group_by=color&group_limit=5&page=2&limit=3&sort_by=price:desc'), FACTS);
    expect(plan.page).toEqual({ kind: 'groups', field: 'color', offset: 5, groups: 5, limit: 3 });
    expect(plan.sortBy).toEqual({ field: 'price', direction: 'desc' });
    expect(plan.readFields).toEqual(['color', 'price']);
  });

  it('reads value_map fields again for the page only where ranking did not read them', () => {
    expect(planSearch(VISUAL, optionsOf(''), FACTS).valueMap).toBeNull();
    expect(planSearch(VISUAL, optionsOf('fl=brand&fq=brand:nike'), FACTS).valueMap).toEqual({ fields: ['brand'], readForPage: false });
    expect(planSearch(VISUAL, optionsOf('fl=brand,price&facets=brand'), FACTS).valueMap).toEqual({ fields: ['brand', 'price'], readForPage: true });
  });

  it('carries the score range, dedup and facets to the answer', () => {
    const plan = planSearch(VISUAL, optionsOf('score_min=0.2&score_max=0.9&dedup=true&dedup_score_threshold=0.05&facets=brand&facets_limit=3'), FACTS);
    expect(plan.scoreRange).toEqual({ min: 0.2, max: 0.9 });
    expect(plan.dedup).toEqual({ threshold: 0.05 });
    expect(plan.facets).toEqual({ fields: [SCHEMA[1]], limit: 3, showCount: false });
  });
});

describe('search answer: the page a plan makes of candidates', () => {
  const candidate = (id: number, score: number, brand?: string): Candidate => ({
    image: { id, im_name: `im${id}`, object_count: 0, metadata: brand === undefined ? {} : { brand } },
    score,
  });
  const CANDIDATES = [candidate(1, 0.9, 'a'), candidate(2, 0.95, 'b'), candidate(3, 0.9, 'a'), candidate(4, 0.5, 'b'), candidate(5, -0.2)];

  it('ranks best first (ties by id), holds the score range to clamped scores, and pages', () => {
    const plan = planSearch(VISUAL, optionsOf('limit=2&page=2&score=true&score_max=0.92'), FACTS);
    const selection = selectPage(CANDIDATES, plan);
    expect(selection.total).toBe(4);
    expect(shownImages(selection).map((image) => image.id)).toEqual([4, 5]);
    expect(toSearchPage(selection, plan, new Map())).toEqual({ total: 4, result: [{ im_name: 'im4', score: 0.5 }, { im_name: 'im5', score: 0 }] });
  });

  it('drops what dedup takes for copies before counting and faceting', () => {
    const plan = planSearch(VISUAL, optionsOf('dedup=true&dedup_score_threshold=0.01&facets=brand&facets_show_count=true'), FACTS);
    const page = toSearchPage(selectPage(CANDIDATES, plan), plan, new Map());
    expect(page).toEqual({
      total: 4,
      result: ['im2', 'im1', 'im4', 'im5'].map((im_name) => ({ im_name })),
      facets: [{ key: 'brand', items: [{ value: 'b', count: 2 }, { value: 'a', count: 1 }] }],
    });
  });

  it('groups by a field, leaving out images without it, with value_map from the metadata read for the page', () => {
    const plan = planSearch(VISUAL, optionsOf('group_by=brand&group_limit=1&page=2&limit=1&fl=brand'), FACTS);
    const selection = selectPage(CANDIDATES, plan);
    const shown = new Map(shownImages(selection).map((image) => [image.id, image.metadata]));
    expect(toSearchPage(selection, plan, shown)).toEqual({
      total: 5,
      group_by_key: 'brand',
      group_limit: 1,
      group_results: [{ group_by_value: 'a', result: [{ im_name: 'im1', value_map: { brand: 'a' } }] }],
    });
  });
});
