import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import worker from '../../src/index';
import { basicAuth, createApp, fixtureUrl, insertAndWait, type Credentials, type SearchBody, appOf, catalogOf } from './helpers';

/**
 * What a search reads from D1 is bounded by the page it answers and the fields its parameters need, not by the
 * metadata the catalog holds (issue 34: 45 MB of valid metadata made every search load all of it). Each search runs
 * through the Worker with a D1 that counts the bytes of every row it hands back.
 */

const BIG_FIELDS = ['story1', 'story2', 'story3', 'story4'];
/** 5000 characters, the most a value may have, of three bytes each in UTF-8: 15 KB a field, 60 KB an image. */
const bigValue = (image: number, field: number): string => `${image}-${field}-`.padEnd(5000, '漢');
const FIELD_BYTES = 15_000;
const IMAGES = ['opencv-doc_fruits', 'opencv-doc_orange', 'opencv-doc_apple', 'skimage_coffee', 'opencv-doc_baboon', 'opencv-doc_home'];

type CountingDb = { db: D1Database; bytes: () => number };

/** A D1 binding that adds up the JSON size of every row it returns (the traffic a search causes, and holds). */
function countingDb(db: D1Database): CountingDb {
  let bytes = 0;
  const count = <T>(rows: T): T => {
    bytes += new TextEncoder().encode(JSON.stringify(rows) ?? '').length;
    return rows;
  };
  const statement = (inner: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(inner, {
      get(target, property) {
        if (property === 'bind') return (...values: unknown[]) => statement(target.bind(...values));
        if (property === 'all' || property === 'first' || property === 'raw' || property === 'run') {
          return async (...args: unknown[]) => count(await (target[property] as (...a: unknown[]) => Promise<unknown>).apply(target, args));
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const unwrap = new WeakMap<D1PreparedStatement, D1PreparedStatement>();
  // The binding, and the sessions searches read through (they may read a replica, README Deploy): both counted.
  const counted = <Sends extends object>(sends: Sends): Sends =>
    new Proxy(sends, {
      get(target, property) {
        if (property === 'withSession') return (...args: unknown[]) => counted((target as unknown as D1Database).withSession(...(args as [string])));
        if (property === 'prepare') {
          return (query: string) => {
            const inner = (target as unknown as D1Database).prepare(query);
            const outer = statement(inner);
            unwrap.set(outer, inner);
            return outer;
          };
        }
        if (property === 'batch') {
          return async (statements: D1PreparedStatement[]) => count(await (target as unknown as D1Database).batch(statements.map((s) => unwrap.get(s) ?? s)));
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return { db: counted(db), bytes: () => bytes };
}

/** A search through the Worker with the counting D1: its answer, and the bytes D1 returned for it. */
async function measuredSearch(app: Credentials, query: string): Promise<{ body: SearchBody; bytes: number }> {
  const { database } = await appOf(app);
  const counting = countingDb(await catalogOf(app));
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://search.test/search?${query}`, { headers: basicAuth(app) }), { ...env, [database]: counting.db }, ctx);
  await waitOnExecutionContext(ctx);
  const body = await response.json<SearchBody>();
  expect(body.status, JSON.stringify(body)).toBe('OK');
  return { body, bytes: counting.bytes() };
}

describe('a search over large metadata', () => {
  let app: Credentials;
  beforeAll(async () => {
    app = await createApp('footprint', [
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float', searchable: true },
      ...BIG_FIELDS.map((name) => ({ name, type: 'string' as const })),
    ]);
    const inserted = await insertAndWait(
      app,
      IMAGES.map((name, image) => ({
        im_name: name,
        im_url: fixtureUrl(`/images/${name}.jpg`),
        brand: image % 2 === 0 ? 'even' : 'odd',
        price: String(image),
        ...Object.fromEntries(BIG_FIELDS.map((field, k) => [field, bigValue(image, k)])),
      })),
    );
    expect(inserted.error_list).toEqual([]);
  });

  it('reads none of the fields it does not answer, whatever their size', async () => {
    const plain = await measuredSearch(app, `im_name=${IMAGES[0]}&limit=2`);
    expect(plain.body.result).toHaveLength(2);
    // Not one field's worth, where the catalog holds 24 such fields across the candidates (and one more in the query image).
    expect(plain.bytes).toBeLessThan(FIELD_BYTES);

    const filtered = await measuredSearch(app, `im_name=${IMAGES[0]}&limit=2&fq=brand:odd&facets=price&sort_by=price:desc&fl=brand`);
    expect(filtered.body.result.map((item) => item.value_map)).toEqual([{ brand: 'odd' }, { brand: 'odd' }]);
    expect(filtered.bytes).toBeLessThan(FIELD_BYTES);
  });

  it('reads a large field it answers for the images of the page alone, and answers it whole', async () => {
    const { body, bytes } = await measuredSearch(app, `im_name=${IMAGES[0]}&limit=2&fl=story2,brand`);
    expect(body.result).toHaveLength(2);
    for (const item of body.result) {
      const image = IMAGES.indexOf(item.im_name);
      expect(item.value_map).toEqual({ story2: bigValue(image, 1), brand: image % 2 === 0 ? 'even' : 'odd' });
    }
    // The page's two values, not the five candidates'.
    expect(bytes).toBeGreaterThan(2 * FIELD_BYTES);
    expect(bytes).toBeLessThan(3 * FIELD_BYTES);
  });

  it('reads the query image whole only for qinfo', async () => {
    const { body, bytes } = await measuredSearch(app, `im_name=${IMAGES[1]}&limit=1&qinfo=true`);
    expect((body as SearchBody & { qinfo: { value_map: Record<string, string> } }).qinfo.value_map.story4).toBe(bigValue(1, 3));
    expect(bytes).toBeGreaterThan(4 * FIELD_BYTES);
    expect(bytes).toBeLessThan(5 * FIELD_BYTES);
  });
});
