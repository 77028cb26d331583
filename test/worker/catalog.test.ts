import { beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, createApp, fixtureUrl, insertAndWait, type Credentials, type SchemaField, type SearchBody } from './helpers';

/** A page of the search envelope's shape, with the schema. */
type CatalogBody = SearchBody & { app_id: string; schema: { fields: SchemaField[] } };

/** By name, as the schema is answered. */
const SCHEMA: SchemaField[] = [
  { name: 'brand', type: 'string', searchable: true },
  { name: 'description', type: 'text', searchable: true },
  { name: 'price', type: 'float', searchable: true },
];

const list = async (app: Credentials, query = ''): Promise<{ response: Response; body: CatalogBody }> => {
  const response = await call(`/images${query}`, { headers: basicAuth(app) });
  return { response, body: await response.json<CatalogBody>() };
};

describe('GET /images (the console\'s Catalog page)', () => {
  let app: Credentials;

  beforeAll(async () => {
    app = await createApp('catalog', SCHEMA);
    // One transaction an image, so that their order (the latest written first) is known.
    for (const [k, color] of ['ff0000', '00ff00', '0000ff'].entries()) {
      const image = { im_name: `c${k}`, im_url: fixtureUrl(`/palette/${color}:100`), brand: `b${k}`, description: 'a long text' };
      await insertAndWait(app, [k === 1 ? image : { ...image, price: String(k + 0.5) }]);
    }
  });

  it('lists the images, the latest first, with the values of the fields not of type text, the count and the schema', async () => {
    const { response, body } = await list(app);
    expect(response.status).toBe(200);
    expect(body).toEqual({
      status: 'OK',
      method: 'images',
      error: [],
      page: 1,
      limit: 20,
      total: 3,
      result: [
        { im_name: 'c2', value_map: { brand: 'b2', price: '2.5' } },
        { im_name: 'c1', value_map: { brand: 'b1' } },
        { im_name: 'c0', value_map: { brand: 'b0', price: '0.5' } },
      ],
      app_id: app.app_id,
      schema: { fields: SCHEMA },
      // Its own product types: none set, the service's defaults.
      product_types: null,
      reqid: response.headers.get('x-log-id'),
    });
  });

  it('pages: the count stays that of the whole catalog, a page past the end is empty', async () => {
    const second = await list(app, '?page=2&limit=2');
    expect([second.body.page, second.body.limit, second.body.total]).toEqual([2, 2, 3]);
    expect(second.body.result.map((item) => item.im_name)).toEqual(['c0']);
    const past = await list(app, '?page=5&limit=2');
    expect([past.body.status, past.body.total, past.body.result]).toEqual(['OK', 3, []]);
  });

  it('refuses bad paging in the envelope, with an empty page', async () => {
    const { response, body } = await list(app, '?limit=101');
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ status: 'fail', method: 'images', error: ['limit must be between 1 and 100.'], page: 1, limit: 20, total: 0, result: [] });
  });

  it("lists only the application's own images, an image removed no more", async () => {
    const other = await createApp('catalog-other');
    expect((await list(other)).body).toMatchObject({ status: 'OK', total: 0, result: [], schema: { fields: [] } });
    await insertAndWait(other, [{ im_name: 'mine', im_url: fixtureUrl('/palette/ffff00:100') }]);
    await call('/remove', { method: 'POST', headers: basicAuth(other), body: new URLSearchParams({ 'im_name[0]': 'mine' }) });
    expect((await list(other)).body).toMatchObject({ status: 'OK', total: 0, result: [] });
    expect((await list(app)).body.total).toBe(3);
  });

  it('answers Basic auth only: the app key, like no key, is refused', async () => {
    for (const response of [await call(`/images?access_key=${app.app_key}`), await call('/images')]) {
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: 'fail', method: 'images', error: ['Unauthorized.'] });
    }
  });
});
