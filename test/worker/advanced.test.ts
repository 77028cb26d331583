import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { getSchema } from '../../src/storage/apps';
import { createApp, discoversearch, fixtureUrl, imageBytes, insertAndWait, replaceSchema, search, uploadsearch, type Credentials, type SearchBody, appOf } from './helpers';

/** 200 catalog images: every usable shared image twice, under two names, with metadata of all four types. */
const BRANDS = ['acme', 'globex', 'initech', 'umbrella'];
type Item = { name: string; file: string; brand: string; price: number; stock: number; description: string };

type AdvancedBody = SearchBody & {
  facets?: ({ key: string; items: { value: string; count?: number }[] } | { key: string; range: { min: number; max: number } })[];
  group_by_key?: string;
  group_limit?: number;
  group_results?: { group_by_value: string; result: SearchBody['result'] }[];
  qinfo?: Record<string, unknown>;
};

describe('advanced search parameters (spec 4.8)', () => {
  let app: Credentials;
  const items: Item[] = [];
  const byName = new Map<string, Item>();
  const query = async (params: string, endpoint = '/search') => {
    const { status, body } = await search(app, params, endpoint);
    return { status, body: body as AdvancedBody };
  };
  /** The search fails (HTTP 200, `status: 'fail'`, an empty page) with one message, which is returned. */
  const refused = async (params: string): Promise<string> => {
    const { status, body } = await query(params);
    expect({ status, body }, params).toMatchObject({ status: 200, body: { status: 'fail', total: 0, result: [] } });
    expect(body.error, params).toHaveLength(1);
    return body.error[0] as string;
  };

  beforeAll(async () => {
    app = await createApp('shop', [
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float', searchable: true },
      { name: 'stock', type: 'int', searchable: true },
      { name: 'description', type: 'text', searchable: true },
      { name: 'sku', type: 'string', searchable: false },
    ]);
    const manifest = await (await fetch(fixtureUrl('/images/manifest.json'))).json<{ file: string; width: number; height: number; category: string }[]>();
    const usable = [...new Map(manifest.filter((entry) => Math.max(entry.width, entry.height) >= 100).map((entry) => [entry.file, entry])).values()];
    for (let i = 0; i < 200; i++) {
      const entry = usable[i % usable.length]!;
      const words = entry.category.split(/[/_]/).join(' ');
      items.push({ name: `item-${i}`, file: entry.file, brand: BRANDS[i % 4]!, price: ((i * 7) % 100) + 0.5, stock: i % 10, description: `${words} ${i % 2 ? 'sale red' : 'new blue'}` });
    }
    items.forEach((item) => byName.set(item.name, item));
    for (let start = 0; start < items.length; start += 100) {
      await insertAndWait(
        app,
        items.slice(start, start + 100).map((item) => ({
          im_name: item.name,
          im_url: fixtureUrl(`/images/${item.file}`),
          brand: item.brand,
          price: String(item.price),
          stock: String(item.stock),
          description: item.description,
          sku: `sku-${item.name}`,
        })),
      );
    }
  }, 400_000);

  const resultItems = (body: AdvancedBody): Item[] => body.result.map((result) => byName.get(result.im_name)!);

  describe('fq', () => {
    it.each([
      ['string exact', 'fq=brand:acme', (item: Item) => item.brand === 'acme'],
      ['string OR', 'fq=brand:acme%20OR%20globex', (item: Item) => item.brand === 'acme' || item.brand === 'globex'],
      ['int range', 'fq=stock:2,4', (item: Item) => item.stock >= 2 && item.stock <= 4],
      ['float exact', 'fq=price:7.5', (item: Item) => item.price === 7.5],
      ['text AND NOT', `fq=${encodeURIComponent('description:sale AND NOT animals')}`, (item: Item) => item.description.includes('sale') && !item.description.includes('animals')],
      ['text OR with parentheses', `fq=${encodeURIComponent('description:(food OR plants) blue')}`, (item: Item) => /food|plants/.test(item.description) && item.description.includes('blue')],
      ['two fields', 'fq=brand:initech&fq=stock:2', (item: Item) => item.brand === 'initech' && item.stock === 2],
    ])('%s', async (_, params, predicate) => {
      const { status, body } = await query(`im_name=item-1&limit=100&${params}`);
      expect(status).toBe(200);
      expect(body.total).toBeGreaterThan(0);
      expect(resultItems(body).every(predicate)).toBe(true);
    });

    it('is pushed down, so a selective filter still finds every match', async () => {
      // stock 3 and brand acme: i ≡ 12 (mod 20), 10 of the 200 images; the unfiltered depth is 100.
      const expected = items.filter((item) => item.stock === 3 && item.brand === 'acme').map((item) => item.name).sort();
      const { body } = await query('im_name=item-0&limit=100&fq=stock:3&fq=brand:acme');
      expect(body.result.map((item) => item.im_name).sort()).toEqual(expected);
    });

    it('ignores a field outside the schema and refuses a non-searchable field or a malformed expression', async () => {
      const ignored = await query('im_name=item-1&fq=colour:red');
      expect(ignored.body.total).toBeGreaterThan(0);
      for (const fq of ['sku:sku-item-1', 'stock:9,2', 'description:(a OR b', 'price:cheap', 'brand:acme&fq=brand:globex']) {
        expect(await refused(`im_name=item-1&fq=${fq.replace(/ /g, '%20')}`), fq).toMatch(/^fq /);
      }
    });
  });

  it('score_min and score_max keep only scores in range, and are checked', async () => {
    const { body } = await query('im_name=item-1&limit=100&score=true&score_min=0.5&score_max=0.9');
    expect(body.result.length).toBeGreaterThan(0);
    expect(body.result.every((item) => item.score! >= 0.5 && item.score! <= 0.9)).toBe(true);
    // The range holds an image's own score, its best match's: a colour search matches an image's palette and each of
    // its objects' under the image's name, and an image whose best is out of range is not answered by another one.
    const scoresOf = async (params: string) =>
      new Map((await query(`color=3366cc&score=true&limit=1000${params}`, '/colorsearch')).body.result.map((item) => [item.im_name, item.score!]));
    const unranged = await scoresOf('');
    for (const [name, best] of [...unranged].slice(0, 20)) {
      const ranged = await scoresOf(`&score_max=${best - 0.0005}`);
      expect(ranged.has(name), name).toBe(false);
      for (const [other, score] of ranged) expect(score, other).toBe(unranged.get(other));
    }
    for (const params of ['score_min=-0.1', 'score_max=1.5', 'score_min=abc', 'score_min=0.8&score_max=0.2']) {
      expect(await refused(`im_name=item-1&${params}`)).toMatch(/score_m(in|ax)/);
    }
    // The exponent form, as Python's str() writes a small float (1e-05), is the same number.
    expect((await query('im_name=item-1&limit=100&score=true&score_min=5e-1&score_max=9E-1')).body.result).toEqual(body.result);
  });

  it('dedup drops copies of the result before; dedup_score_threshold is the least score gap between adjacent results', async () => {
    const plain = resultItems((await query('im_name=item-5&limit=100')).body).map((item) => item.file);
    expect(new Set(plain).size).toBeLessThan(plain.length);
    const deduped = resultItems((await query('im_name=item-5&limit=100&dedup=true')).body).map((item) => item.file);
    expect(new Set(deduped).size).toBe(deduped.length);
    const gap = 0.02;
    const spaced = (await query(`im_name=item-5&limit=1000&score=true&dedup=true&dedup_score_threshold=${gap}`)).body.result.map((item) => item.score!);
    expect(spaced.length).toBeGreaterThan(1);
    expect(spaced.length).toBeLessThan(deduped.length);
    for (let i = 1; i < spaced.length; i++) expect(spaced[i - 1]! - spaced[i]!).toBeGreaterThan(gap);
  });

  it('facets count values over the results, give numeric ranges, and honour facets_limit', async () => {
    const { body } = await query('im_name=item-1&limit=5&facets=brand,price&facets_show_count=true');
    const brand = body.facets!.find((facet) => facet.key === 'brand') as { items: { value: string; count: number }[] };
    expect(brand.items.reduce((sum, item) => sum + item.count, 0)).toBe(body.total);
    expect(brand.items.map((item) => item.count)).toEqual([...brand.items.map((item) => item.count)].sort((a, b) => b - a));
    const price = body.facets!.find((facet) => facet.key === 'price') as { range: { min: number; max: number } };
    expect(price.range.min).toBeGreaterThanOrEqual(0.5);
    expect(price.range.max).toBeLessThanOrEqual(99.5);
    const all = (await query('im_name=item-1&facets=*&facets_limit=2')).body.facets!;
    expect(all.map((facet) => facet.key).sort()).toEqual(['brand', 'price', 'stock']);
    expect((all.find((facet) => facet.key === 'brand') as { items: { count?: number }[] }).items).toHaveLength(2);
    expect((all.find((facet) => facet.key === 'brand') as { items: { count?: number }[] }).items[0]!.count).toBeUndefined();
  });

  it('group_by groups the results by a searchable field, group_limit groups a page', async () => {
    const { body } = await query('im_name=item-1&group_by=brand&group_limit=2&limit=3&fl=brand');
    expect(body).toMatchObject({ group_by_key: 'brand', group_limit: 2 });
    expect(body.group_results).toHaveLength(2);
    for (const group of body.group_results!) {
      expect(group.result.length).toBeLessThanOrEqual(3);
      expect(group.result.every((item) => item.value_map?.brand === group.group_by_value)).toBe(true);
    }
    const next = (await query('im_name=item-1&group_by=brand&group_limit=2&page=2')).body.group_results!;
    expect(next.map((group) => group.group_by_value)).not.toContain(body.group_results![0]!.group_by_value);
    expect(await refused('im_name=item-1&group_by=sku')).toBe('group_by field sku must be a searchable field.');
    // A searchable text field groups too (spec 2.2), by its whole value.
    const byText = (await query('im_name=item-1&group_by=description&group_limit=100&limit=100')).body;
    expect(byText).toMatchObject({ status: 'OK', group_by_key: 'description' });
    expect(byText.group_results!.length).toBeGreaterThan(1);
    for (const group of byText.group_results!) {
      expect(group.result.every((item) => byName.get(item.im_name)!.description === group.group_by_value)).toBe(true);
    }
    expect(await refused('im_name=item-1&group_by=brand&group_limit=101')).toBe('group_limit must be between 1 and 100.');
  });

  it('sort_by sorts within the page and needs a direction', async () => {
    const ranked = (await query('im_name=item-1&limit=10')).body.result.map((item) => item.im_name);
    const sorted = (await query('im_name=item-1&limit=10&sort_by=price:asc&fl=price')).body.result;
    expect(sorted.map((item) => item.im_name).sort()).toEqual([...ranked].sort());
    const prices = sorted.map((item) => Number(item.value_map!.price));
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const descending = (await query('im_name=item-1&limit=10&sort_by=stock:DESC&fl=stock')).body.result.map((item) => Number(item.value_map!.stock));
    expect(descending).toEqual([...descending].sort((a, b) => b - a));
    expect(await refused('im_name=item-1&sort_by=price')).toBe('sort_by must be <field>:asc or <field>:desc.');
  });

  it('qinfo describes the query', async () => {
    expect((await query('im_name=item-2&qinfo=true')).body.qinfo).toEqual({
      im_name: 'item-2',
      value_map: { brand: 'initech', price: String(items[2]!.price), stock: '2', sku: 'sku-item-2' },
    });
    expect((await query('color=ff0000&qinfo=true', '/colorsearch')).body.qinfo).toEqual({ colors: [{ hex: 'ff0000', ratio: 1 }] });
  });

  it('pages stay consistent: no duplicates or gaps between page 1 and 2', async () => {
    const all = (await query('im_name=item-3&limit=40&fq=stock:0,6')).body.result.map((item) => item.im_name);
    const first = (await query('im_name=item-3&limit=20&page=1&fq=stock:0,6')).body.result.map((item) => item.im_name);
    const second = (await query('im_name=item-3&limit=20&page=2&fq=stock:0,6')).body.result.map((item) => item.im_name);
    expect([...first, ...second]).toEqual(all);
  });

  it('applies on every search endpoint', async () => {
    const color = await query('color=3366cc&fq=brand:globex&limit=50', '/colorsearch');
    expect(resultItems(color.body).every((item) => item.brand === 'globex')).toBe(true);
    const upload = await uploadsearch(app, { image: await imageBytes('/images/skimage_coffee.jpg'), fq: 'stock:5', limit: '50' });
    expect(upload.body.result.every((item) => byName.get(item.im_name)!.stock === 5)).toBe(true);
    const discover = await discoversearch(app, { image: await imageBytes('/images/skimage_coffee.jpg'), detection: ' ', fq: 'brand:umbrella' });
    expect(discover.body.objects[0]!.result.every((item) => byName.get(item.im_name)!.brand === 'umbrella')).toBe(true);
    const grouped = await discoversearch(app, { image: await imageBytes('/images/skimage_coffee.jpg'), group_by: 'brand' });
    expect(grouped).toMatchObject({ status: 200, body: { status: 'fail', error: ['group_by is not supported here.'], objects: [] } });
  });
});

describe("fields named after Object.prototype's properties", () => {
  it('hold their own values: an image without one has none, and `__proto__` is stored, filtered, faceted and grouped', async () => {
    const app = await createApp('prototype-names', [
      { name: '__proto__', type: 'string', searchable: true },
      { name: 'toString', type: 'int', searchable: true },
      { name: 'valueOf', type: 'string', searchable: false },
    ]);
    const image = (name: string, file: string, values: Record<string, string> = {}) => ({ im_name: name, im_url: fixtureUrl(`/images/${file}`), ...values });
    const status = await insertAndWait(app, [
      image('valued', 'animals_birds_hen.png', { ['__proto__']: 'red', toString: '7', valueOf: 'kept' }),
      image('bare', 'animals_birds_rooster.png'),
    ]);
    expect(status).toMatchObject({ success_count: 2, fail_count: 0 });

    const facets = 'facets=__proto__,toString&facets_show_count=true';
    const fromValued = (await search(app, `im_name=valued&get_all_fl=true&qinfo=true&${facets}`)).body as AdvancedBody;
    // A computed key: `__proto__:` in a literal would set the prototype instead of a property.
    expect(fromValued.qinfo).toEqual({ im_name: 'valued', value_map: { ['__proto__']: 'red', toString: '7', valueOf: 'kept' } });
    expect(fromValued.result).toEqual([{ im_name: 'bare', value_map: {} }]);
    expect(fromValued.facets).toEqual([
      { key: '__proto__', items: [] },
      { key: 'toString', range: null },
    ]);
    const fromBare = (await search(app, `im_name=bare&get_all_fl=true&${facets}`)).body as AdvancedBody;
    expect(fromBare.result).toEqual([{ im_name: 'valued', value_map: { ['__proto__']: 'red', toString: '7', valueOf: 'kept' } }]);
    expect(fromBare.facets).toEqual([
      { key: '__proto__', items: [{ value: 'red', count: 1 }] },
      { key: 'toString', range: { min: 7, max: 7 } },
    ]);
    const filtered = async (fq: string) => (await search(app, `im_name=bare&fq=${encodeURIComponent(fq)}`)).body.result.map((item) => item.im_name);
    expect(await filtered('__proto__:red')).toEqual(['valued']);
    expect(await filtered('toString:7')).toEqual(['valued']);
    expect(await filtered('__proto__:blue')).toEqual([]);
    const grouped = (await search(app, 'im_name=bare&group_by=__proto__')).body as AdvancedBody;
    expect(grouped.group_results).toEqual([{ group_by_value: 'red', result: [{ im_name: 'valued' }] }]);
  }, 120_000);
});

describe('a field made searchable after its images were inserted', () => {
  it('is filtered exactly at once, and counts as carried by the vectors only once every image was inserted again', async () => {
    const app = await createApp('late-searchable', [
      { name: 'price', type: 'float', searchable: false },
      { name: 'story', type: 'text', searchable: true },
    ]);
    const files = ['animals_birds_hen.png', 'animals_birds_rooster.png', 'animals_birds_penguin.png', 'animals_birds_magpie.png'];
    const images = files.map((file, i) => ({ im_name: `p${i}`, im_url: fixtureUrl(`/images/${file}`), price: String(10 * (i + 1)), story: `bird ${i}` }));
    await insertAndWait(app, images);
    const carried = async () => Object.fromEntries((await getSchema(env, await appOf(app))).map((field) => [field.name, field.carried]));
    await replaceSchema(app, [
      { name: 'price', type: 'float', searchable: true },
      { name: 'story', type: 'text', searchable: true },
    ]);
    expect(await carried()).toEqual({ price: false, story: false });
    // The vectors were written without the price: a filter the index applied would find none of them.
    const found = async () => (await search(app, `im_name=p0&fq=${encodeURIComponent('price:15,35')}`)).body.result.map((item) => item.im_name).sort();
    expect(await found()).toEqual(['p1', 'p2']);

    await insertAndWait(app, images.slice(0, 3));
    expect((await carried()).price).toBe(false);
    await insertAndWait(app, images.slice(3));
    expect((await carried()).price).toBe(true);
    expect(await found()).toEqual(['p1', 'p2']);

    // Carried before and after (another type too) stays carried; a field added holds no value yet, so every vector
    // carries it at once; a text field the images have values for, turned into a string field, is not carried yet.
    await replaceSchema(app, [
      { name: 'price', type: 'int', searchable: true },
      { name: 'brand', type: 'string', searchable: true },
      { name: 'story', type: 'string', searchable: true },
    ]);
    expect(await carried()).toEqual({ brand: true, price: true, story: false });
  }, 180_000);
});
