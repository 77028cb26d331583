import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import * as responses from '../../src/openapi/responses';
import { basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, search, waitForTransaction, catalogOf } from './helpers';

type InsertBody = { status: string; method: string; trans_id?: number; total: number; error: Record<string, unknown>[] };

const HEN = fixtureUrl('/images/animals_birds_hen.png');
const FAILING = fixtureUrl('/status/404');
const fields = (count: number): Record<string, string> => Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, 'v']));

describe('POST /insert validation (spec 7.2)', () => {
  const schema = [
    { name: 'price', type: 'float' as const },
    { name: 'stock', type: 'int' as const },
    { name: 'brand', type: 'string' as const, searchable: true },
    { name: 'story', type: 'text' as const, searchable: true },
  ];

  it.each([
    ['im_name with a space', { im_name: 'bad name', im_url: HEN }, 107, 'Invalid im_name.'],
    ['im_name with a slash', { im_name: 'a/b', im_url: HEN }, 107, 'Invalid im_name.'],
    ['empty im_name', { im_name: '', im_url: HEN }, 107, 'Invalid im_name.'],
    ['missing im_name', { im_url: HEN }, 107, 'Invalid im_name.'],
    ['missing im_url', { im_name: 'a' }, 108, 'Missing im_url.'],
    ['empty im_url', { im_name: 'a', im_url: '' }, 108, 'Missing im_url.'],
    ['im_name over 128', { im_name: 'n'.repeat(129), im_url: HEN }, 106, 'im_name exceeds length limit.'],
    ['a value over 5000', { im_name: 'a', im_url: HEN, note: 'y'.repeat(5001) }, 106, 'note exceeds length limit.'],
    ['an im_url over 5000', { im_name: 'a', im_url: `${HEN}?${'q'.repeat(5000)}` }, 106, 'im_url exceeds length limit.'],
    ['33 keys', { im_name: 'a', im_url: HEN, ...fields(31) }, 105, 'Number of parameters for image exceeds maximum limit of 32.'],
    ['a float field with text', { im_name: 'a', im_url: HEN, price: 'cheap' }, 109, 'price should be of data type float.'],
    ['an int field with a fraction', { im_name: 'a', im_url: HEN, stock: '1.5' }, 109, 'stock should be of data type int.'],
    ['an int field past 2^53', { im_name: 'a', im_url: HEN, stock: '9007199254740993' }, 109, 'stock should be of data type int.'],
    // Number() reads these; the filter language does not, so a stored value could never be matched.
    ['a float field in hex', { im_name: 'a', im_url: HEN, price: '0x10' }, 109, 'price should be of data type float.'],
    ['a float field in binary', { im_name: 'a', im_url: HEN, price: '0b11' }, 109, 'price should be of data type float.'],
    ['a float field of Infinity', { im_name: 'a', im_url: HEN, price: 'Infinity' }, 109, 'price should be of data type float.'],
    // 5000 characters, but 15 KB: more than the vector index holds as filterable metadata (10 KiB a vector).
    ['a searchable value too large in bytes for the vector index', { im_name: 'a', im_url: HEN, brand: '€'.repeat(5000) }, 106, 'brand exceeds length limit.'],
  ])('rejects %s', async (_, image, code, message) => {
    const app = await createApp('shop', schema);
    const response = await insert(app, [{ im_name: 'ok', im_url: FAILING }, image]);
    expect(response.status).toBe(200);
    const body = await response.json<InsertBody>();
    expect(body).toMatchObject({ status: 'warning', method: 'insert', total: 1 });
    expect(body.error).toEqual([{ index: 1, ...('im_name' in image ? { im_name: image.im_name } : {}), error_code: code, error_message: message }]);
  });

  it.each([
    ['every allowed im_name character', { im_name: 'Az09-_.:x', im_url: FAILING }],
    ['an im_name of 128', { im_name: 'n'.repeat(128), im_url: FAILING }],
    ['a value of 5000', { im_name: 'a', im_url: FAILING, note: 'y'.repeat(5000) }],
    ['a searchable value of 5000 bytes', { im_name: 'a', im_url: FAILING, brand: 'y'.repeat(5000) }],
    // Text fields are matched after the query, never carried by the vectors.
    ['a text value of 15 KB', { im_name: 'a', im_url: FAILING, story: '€'.repeat(5000) }],
    ['32 keys', { im_name: 'a', im_url: FAILING, ...fields(30) }],
    ['typed numbers', { im_name: 'a', im_url: FAILING, price: '-1.5e2', stock: '+42' }],
  ])('accepts %s', async (_, image) => {
    const app = await createApp('shop', schema);
    const body = await (await insert(app, [image])).json<InsertBody>();
    expect(body).toMatchObject({ status: 'OK', total: 1, error: [] });
  });

  it('refuses a key given twice under two spellings of one index, as a repeated parameter', async () => {
    const app = await createApp();
    const form = new URLSearchParams({ 'im_name[0]': 'first', 'im_name[00]': 'second', 'im_url[0]': FAILING });
    const response = await call('/insert', { method: 'POST', headers: basicAuth(app), body: form });
    expect(await response.json()).toMatchObject({ status: 'fail', method: 'insert', error: ['im_name[0] must be given only once.'] });
  });

  it('reads an urlencoded body as it reads the query string: a malformed escape stays in the value', async () => {
    const app = await createApp();
    const body = `im_name[0]=pct%ZZname&im_url[0]=${encodeURIComponent(FAILING)}`;
    const headers = { ...basicAuth(app), 'content-type': 'application/x-www-form-urlencoded' };
    const inBody = await (await call('/insert', { method: 'POST', headers, body })).json<InsertBody>();
    const inQuery = await (await call(`/insert?${body}`, { method: 'POST', headers: basicAuth(app) })).json<InsertBody>();
    expect(inBody.status).toBe('fail');
    expect(inBody.error).toContainEqual({ index: 0, im_name: 'pct%ZZname', error_code: 107, error_message: 'Invalid im_name.' });
    expect(inBody.error).toEqual(inQuery.error);
  });

  it('accepts exactly 100 images and refuses 101 (103), keeping nothing of the refused call', async () => {
    const app = await createApp();
    const images = (count: number) => Array.from({ length: count }, (_, i) => ({ im_name: `n${i}`, im_url: FAILING }));
    expect(await (await insert(app, images(100))).json()).toMatchObject({ status: 'OK', total: 100 });
    const tooMany = await insert(app, images(101));
    expect(tooMany.status).toBe(200);
    expect(await tooMany.json()).toEqual({
      status: 'fail',
      method: 'insert',
      error: [{ error_code: 103, error_message: 'Exceeded maximum insert batch size of 100.' }],
      total: 0,
      result: [],
    });
    const kept = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM insert_transactions WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
    expect(kept?.n).toBe(1);
  });

  it('fails a call with nothing valid (104), listing each image and keeping nothing', async () => {
    const app = await createApp();
    for (const images of [[], [{ im_name: 'no-url' }, { im_name: '$', im_url: HEN }]] as Record<string, string>[][]) {
      const response = await insert(app, images);
      expect(response.status).toBe(200);
      const body = await response.json<InsertBody>();
      expect(body).toMatchObject({ status: 'fail', method: 'insert', total: 0, result: [] });
      expect(body.error).toHaveLength(images.length + 1);
      expect(body.error.at(-1)).toEqual({ error_code: 104, error_message: 'No image inserted.' });
    }
    const kept = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM insert_transactions WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
    expect(kept?.n).toBe(0);
  });
});

describe('indexes of /insert and /remove: integers from 0 to 2^31 - 1, else a parameter error', () => {
  const BAD_INDEX = /: an index must be an integer from 0 to 2147483647\.$/;

  it.each([['309 nines', '9'.repeat(309)], ['a negative', '-1'], ['a fraction', '1.5'], ['an empty', ''], ['a word', 'x'], ['2^31', '2147483648']])(
    'refuses %s index on /insert (with or without im_url) and /remove, whatever the call also holds',
    async (_, index) => {
      const app = await createApp();
      const calls: [string, Record<string, string>][] = [
        ['/insert', { [`im_name[${index}]`]: 'wrench', [`im_url[${index}]`]: HEN, 'im_name[0]': 'ok', 'im_url[0]': FAILING }],
        ['/insert', { [`im_name[${index}]`]: 'wrench', 'brand[0]': 'acme' }],
        ['/remove', { [`im_name[${index}]`]: 'wrench', 'im_name[0]': 'other' }],
      ];
      for (const [path, fields] of calls) {
        const response = await call(path, { method: 'POST', headers: basicAuth(app), body: new URLSearchParams(fields) });
        expect(response.status).toBe(200);
        const body = await response.json<{ status: string; error: string[]; total: number }>();
        expect(body).toMatchObject({ status: 'fail', method: path.slice(1), total: 0, result: [] });
        expect(body.error).toEqual([expect.stringMatching(BAD_INDEX)]);
      }
      const kept = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM insert_transactions WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
      expect(kept?.n).toBe(0);
    },
  );

  it('refuses a file sent under a bad index the same way', async () => {
    const app = await createApp();
    const form = new FormData();
    form.append(`im_name[${'9'.repeat(309)}]`, 'wrench');
    form.append(`image[${'9'.repeat(309)}]`, new Blob([new Uint8Array(16)]), 'wrench.png');
    const body = await (await call('/insert', { method: 'POST', headers: basicAuth(app), body: form })).json<{ status: string; error: string[] }>();
    expect(body.status).toBe('fail');
    expect(body.error).toEqual([expect.stringMatching(BAD_INDEX)]);
  });

  it('takes the largest index, and answers with it', async () => {
    const app = await createApp();
    const response = await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[2147483647]': 'nothing' }) });
    expect((await response.json<{ error: unknown[] }>()).error).toEqual([
      { index: 2147483647, im_name: 'nothing', error_code: 102, error_message: 'Image not found with im_name.' },
    ]);
  });
});

describe('POST /insert: fields outside the schema are named in ignored_fields (docs/decisions.md)', () => {
  const schema = [{ name: 'brand', type: 'string' as const, searchable: true }];
  const storedMetadata = async (app: { app_id: string }, imName: string) =>
    JSON.parse((await (await catalogOf(app)).prepare('SELECT metadata FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, imName).first<{ metadata: string }>())!.metadata);

  it('names them per accepted image of a new insert, refused images keeping only their error', async () => {
    const app = await createApp('shop', schema);
    const body = await (
      await insert(app, [
        { im_name: 'a', im_url: FAILING, brand: 'acme', colour: 'red', size: 'L' },
        { im_name: 'bad name', im_url: FAILING, colour: 'red' },
        { im_name: 'c', im_url: FAILING, brand: 'acme' },
        { im_name: 'd', im_url: FAILING, colour: 'blue' },
      ])
    ).json<InsertBody>();
    expect(responses.insertResponse.strict().parse(body)).toEqual({
      status: 'warning',
      method: 'insert',
      trans_id: expect.any(Number),
      total: 3,
      result: [],
      error: [{ index: 1, im_name: 'bad name', error_code: 107, error_message: 'Invalid im_name.' }],
      ignored_fields: [
        { index: 0, im_name: 'a', fields: ['colour', 'size'] },
        { index: 3, im_name: 'd', fields: ['colour'] },
      ],
    });
  });

  it('names them for a metadata-only update, which stores the schema fields only', async () => {
    const app = await createApp('shop', schema);
    await insertAndWait(app, [{ im_name: 'hen', im_url: HEN, brand: 'farm' }]);
    const body = await (
      await insert(app, [
        { im_name: 'hen', brand: 'coop', colour: 'white' },
        { im_name: 'unknown', colour: 'white' },
      ])
    ).json<InsertBody>();
    expect(responses.insertResponse.strict().parse(body)).toMatchObject({
      status: 'warning',
      total: 1,
      error: [{ index: 1, im_name: 'unknown', error_code: 108, error_message: 'Missing im_url.' }],
      ignored_fields: [{ index: 0, im_name: 'hen', fields: ['colour'] }],
    });
    expect(await waitForTransaction(app, body.trans_id!)).toMatchObject({ processed_percent: 100, success_count: 1 });
    expect(await storedMetadata(app, 'hen')).toEqual({ brand: 'coop' });
  });

  it('leaves the key out when every field is in the schema', async () => {
    const app = await createApp('shop', schema);
    const body = await (await insert(app, [{ im_name: 'a', im_url: FAILING, brand: 'acme' }])).json<InsertBody>();
    expect(body).toEqual({ status: 'OK', method: 'insert', trans_id: expect.any(Number), total: 1, result: [], error: [] });
    expect(body).not.toHaveProperty('ignored_fields');
  });
});

describe('insert processing: per-image errors land in error_list (201, 202, 203)', () => {
  it.each([
    ['an HTTP error', '/status/404', 201, 'Could not download the image from im_url.'],
    ['a server that never answers', '/hang', 201, 'Could not download the image from im_url.'],
    ['a body past the size cap', '/endless', 201, 'Could not download the image from im_url.'],
    ['a closed port', 'http://127.0.0.1:9/a.jpg', 201, 'Could not download the image from im_url.'],
    ['a non-HTTP scheme', 'file:///etc/passwd', 201, 'Could not download the image from im_url.'],
    ['bytes that are no image', '/images/manifest.json', 202, 'Unsupported image format.'],
    ['a truncated PNG', '/truncated/animals_birds_hen.png', 202, 'Unsupported image format.'],
    ['an image under 100 px on both sides', '/images/food_fruit_apple_fuji.png', 203, 'Unsupported image dimension.'],
    ['a header declaring over 40 megapixels', '/png-header/8000x5001', 203, 'Unsupported image dimension.'],
    ['a header declaring zero pixels', '/png-header/0x0', 203, 'Unsupported image dimension.'],
  ])('%s', async (_, source, code, message) => {
    const app = await createApp();
    const url = source.startsWith('/') ? fixtureUrl(source) : source;
    const { trans_id } = await (await insert(app, [{ im_name: 'x', im_url: url }])).json<{ trans_id: number }>();
    const status = await waitForTransaction(app, trans_id);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 0, fail_count: 1, total: 1 });
    expect(status.error_list).toEqual([{ im_name: 'x', error_code: code, error_message: message }]);
  });

  it('accepts exactly 40 megapixels by the header (and then fails only at decoding, 202)', async () => {
    const app = await createApp();
    const { trans_id } = await (await insert(app, [{ im_name: 'x', im_url: fixtureUrl('/png-header/8000x5000') }])).json<{ trans_id: number }>();
    expect((await waitForTransaction(app, trans_id)).error_list[0]?.error_code).toBe(202);
  });

  it('tells the format by the bytes, not the URL', async () => {
    const app = await createApp();
    await insertAndWait(app, [{ im_name: 'png-named-jpg', im_url: fixtureUrl('/images/animals_birds_hen.png/photo.jpg') }]);
    const row = await (await catalogOf(app)).prepare('SELECT format FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, 'png-named-jpg').first();
    expect(row).toEqual({ format: 'png' });
  });
});

describe('GET /insert/status', () => {
  it('pages through error_list: pages = ceil(fail_count / error_limit)', async () => {
    const app = await createApp();
    const response = await insert(app, Array.from({ length: 5 }, (_, i) => ({ im_name: `gone${i}`, im_url: FAILING })));
    const { trans_id } = await response.json<{ trans_id: number }>();
    await waitForTransaction(app, trans_id);
    type Status = { error_list: { im_name: string }[]; error_page: number; error_limit: number; fail_count: number };
    const page = async (query: string): Promise<Status> =>
      (await (await call(`/insert/status/${trans_id}?${query}`, { headers: basicAuth(app) })).json<{ result: Status[] }>()).result[0]!;

    const names = async (query: string) => (await page(query)).error_list.map((entry) => entry.im_name);
    expect(await names('error_page=1&error_limit=2')).toEqual(['gone0', 'gone1']);
    expect(await names('error_page=2&error_limit=2')).toEqual(['gone2', 'gone3']);
    expect(await names('error_page=3&error_limit=2')).toEqual(['gone4']);
    expect(await names('error_page=4&error_limit=2')).toEqual([]);
    expect(await page('')).toMatchObject({ error_page: 1, error_limit: 10, fail_count: 5 });
  });

  it.each([
    ['error_page=0', 'error_page must be between 1 and 9007199254740991.'],
    ['error_page=x', 'error_page must be an integer.'],
    ['error_limit=0', 'error_limit must be between 1 and 100.'],
    ['error_limit=101', 'error_limit must be between 1 and 100.'],
  ])('rejects %s', async (query, message) => {
    const app = await createApp();
    const { trans_id } = await (await insert(app, [{ im_name: 'a', im_url: FAILING }])).json<{ trans_id: number }>();
    const response = await call(`/insert/status/${trans_id}?${query}`, { headers: basicAuth(app) });
    expect(response.status).toBe(200);
    // A parameter error has no spec 7.2 code: a plain string.
    expect(await response.json()).toEqual({ status: 'fail', method: 'insert/status', error: [message], result: [] });
  });

  it("answers 101 for an unknown transaction and for another application's", async () => {
    const owner = await createApp();
    const other = await createApp();
    const { trans_id } = await (await insert(owner, [{ im_name: 'gone', im_url: FAILING }])).json<{ trans_id: number }>();
    for (const [app, id] of [[owner, '12345'], [owner, 'abc'], [owner, '99999999999999999999'], [other, String(trans_id)]] as const) {
      const response = await call(`/insert/status/${id}`, { headers: basicAuth(app) });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        status: 'fail',
        method: 'insert/status',
        error: [{ error_code: 101, error_message: 'Transaction not found with trans_id.' }],
        result: [],
      });
    }
  });

  it('reaches 100 only once every image is searchable or failed', async () => {
    const app = await createApp();
    const { trans_id } = await (await insert(app, [
      { im_name: 'fast', im_url: HEN },
      { im_name: 'late', im_url: fixtureUrl('/slow/animals_birds_rooster.png') },
    ])).json<{ trans_id: number }>();
    const early = (await (await call(`/insert/status/${trans_id}`, { headers: basicAuth(app) })).json<{ result: { processed_percent: number }[] }>()).result[0];
    expect(early?.processed_percent).toBeLessThan(100);
    const done = await waitForTransaction(app, trans_id);
    expect(done).toMatchObject({ processed_percent: 100, success_count: 2 });
    expect((await search(app, 'im_name=late')).body.result.map((item) => item.im_name)).toEqual(['fast']);
  });
});
