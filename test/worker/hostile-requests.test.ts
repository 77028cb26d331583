import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_FQ_LENGTH, MAX_PAREN_DEPTH } from '../../src/filter';
import { MAX_BODY_BYTES, MAX_PARAMS, UNAUTHENTICATED_BODY } from '../../src/http/params';
import { INSERT_MAX_BODY_BYTES } from '../../src/routes/data';
import { basicAuth, call, createApp, fixtureUrl, imageBytes, insertAndWait, type Credentials, catalogOf } from './helpers';

/**
 * Requests built to hurt: malformed and oversized bodies, lying content types, missing and repeated parameters,
 * numbers that are not numbers, filters too long or too deep. Each gets a clear failure in the endpoint's envelope,
 * with HTTP 200 as every answer of the API endpoints. The main application has no images, so a search whose
 * parameters all pass ends in "App doesn't have any images.": that answer shows the parameters were accepted, without
 * reaching the inference service. The checks that need an image source to be read use a second application with one
 * image.
 */

const EMPTY_COLLECTION = "App doesn't have any images.";
const FORM_UNREADABLE = 'The request body could not be parsed as form data.';
const TOO_LARGE = 'The request body exceeds the 11MB limit.';
const NO_SOURCE = 'Exactly one of image, im_url and im_id is required.';
const TRANSACTION_NOT_FOUND = 'Transaction not found with trans_id.';
const URLENCODED = { 'content-type': 'application/x-www-form-urlencoded' };
const NO_BOUNDARY = { 'content-type': 'multipart/form-data' };
const MB = 1024 * 1024;

type Envelope = { status: string; method: string; error: unknown[]; reqid?: string };

/** What a failed search carries besides status, method and error: an empty page (the paging asked, or 1 and 10). */
const emptyAnswer = (method: string, paging: { page: number; limit: number }): Record<string, unknown> =>
  method === 'discoversearch'
    ? { page: paging.page, result_limit: paging.limit, objects: [], reqid: expect.any(String) }
    : { page: paging.page, limit: paging.limit, total: 0, result: [], reqid: expect.any(String) };

/**
 * The response is HTTP 200 with the envelope of a failed search: one message, as a string, the empty answer of the
 * endpoint (with the paging asked for, `paging`, the defaults unless given) and the reqid of X-Log-ID.
 */
async function expectSearchFailure(
  response: Response,
  method: string,
  message: string,
  paging = { page: 1, limit: 10 },
): Promise<void> {
  const body = await response.json<Envelope>();
  const expected = { status: 'fail', method, error: [message], ...emptyAnswer(method, paging) };
  expect({ status: response.status, body }).toEqual({ status: 200, body: expected });
  expect(response.headers.get('x-log-id')).toBe(body.reqid);
}

/**
 * The response is HTTP 200 with the envelope of a failed data call: one error entry, an `{error_code, error_message}`
 * object when `code` (a numbered data error of spec 7.2) is given, else the message as a plain string.
 */
async function expectDataFailure(response: Response, method: string, message: string, code?: number): Promise<void> {
  const body = await response.json<Envelope>();
  expect(response.status, JSON.stringify(body)).toBe(200);
  const entry = code === undefined ? message : { error_code: code, error_message: message };
  const nothing = method === 'insert/status' ? { result: [] } : { total: 0, result: [] };
  expect(body).toEqual({ status: 'fail', method, error: [entry], ...nothing });
}

const multipart = (boundary: string, body: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  body,
});
const part = (name: string, value: string): string =>
  `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;

/** An urlencoded body of about `size` bytes (`x=aaa...`), streamed, counting what the Worker pulled of it. */
function countedStream(size: number): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  const chunk = new TextEncoder().encode('a'.repeat(64 * 1024));
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('x='));
    },
    pull(controller) {
      if (pulled >= size) return controller.close();
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { body, pulled: () => pulled };
}

/**
 * A body streamed as `head`, then `next(k)` for k = 0, 1, ... until `size` bytes, counting what the Worker pulled of
 * it: a body the Worker refuses at once is pulled little.
 */
function streamOf(head: string, next: (k: number) => string, size = 19 * MB): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  const encoder = new TextEncoder();
  let pulled = 0;
  let k = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(head));
    },
    pull(controller) {
      if (pulled >= size) return controller.close();
      // About 64 KB a chunk, as a network delivers a large body.
      let text = '';
      while (text.length < 64 * 1024) text += next(k++);
      const chunk = encoder.encode(text);
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { body, pulled: () => pulled };
}

/** The query images an application keeps: its D1 rows and R2 objects. */
async function keptQueryImages(app: Credentials): Promise<{ rows: unknown[]; objects: string[] }> {
  const { results: rows } = await (await catalogOf(app)).prepare('SELECT id FROM query_images WHERE app_id = ?').bind(app.app_id).all();
  const listed = await env.BLOBS.list({ prefix: `${app.app_id}/queries/` });
  return { rows, objects: listed.objects.map((object) => object.key) };
}

describe('hostile requests', () => {
  let app: Credentials;
  let auth: Record<string, string>;
  const withAuth = (init: RequestInit): RequestInit => ({
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string>) },
  });
  const get = (path: string): Promise<Response> => call(path, { headers: auth });
  const post = (path: string, body: BodyInit, headers: Record<string, string> = {}): Promise<Response> =>
    call(path, withAuth({ method: 'POST', headers, body }));

  beforeAll(async () => {
    app = await createApp('hostile', [
      { name: 'tag', type: 'text', searchable: true },
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float', searchable: true },
    ]);
    auth = basicAuth(app);
  });

  describe('bodies', () => {
    it.each([
      ['a boundary the body does not use', multipart('expected', `--other\r\n${part('im_id', 'x')}--other--\r\n`)],
      ['a truncated body', multipart('b', `--b\r\n${part('im_id', 'x')}--b\r\nContent-Disposition: form-da`)],
      ['garbage', multipart('b', '\u0000\u00ff garbage \r\n\r\n--')],
      ['no boundary at all', { method: 'POST', headers: NO_BOUNDARY, body: `--b\r\n${part('im_id', 'x')}--b--` }],
      ['JSON that says it is multipart', multipart('b', '{"im_id": "x"}')],
    ])('refuses a multipart body with %s', async (_, init) => {
      await expectSearchFailure(await call('/uploadsearch', withAuth(init)), 'uploadsearch', FORM_UNREADABLE);
      await expectDataFailure(await call('/insert', withAuth(init)), 'insert', FORM_UNREADABLE);
    });

    it('refuses an unreadable body that must carry the app key', async () => {
      const response = await call('/uploadsearch', multipart('b', 'garbage'));
      await expectSearchFailure(response, 'uploadsearch', FORM_UNREADABLE);
    });

    it('reads a multipart body that says it is urlencoded as urlencoded, and finds no name in it', async () => {
      const form = new FormData();
      form.append('im_name[0]', 'abc');
      const bytes = await new Response(form).arrayBuffer();
      await expectDataFailure(await post('/remove', bytes, URLENCODED), 'remove', 'im_name[0] is required.');
    });

    it('never reads a body of another type', async () => {
      const body = 'im_name[0]=a&im_url[0]=http://127.0.0.1/a.jpg';
      const response = await post('/insert', body, { 'content-type': 'text/plain' });
      await expectDataFailure(response, 'insert', 'No image inserted.', 104);
    });

    it('reads a form content type whatever its case', async () => {
      const headers = { 'content-type': 'Application/X-WWW-Form-URLEncoded' };
      const response = await post('/remove', 'im_name[3]=nothing', headers);
      expect(response.status).toBe(200);
      const error = [{ index: 3, im_name: 'nothing', error_code: 102, error_message: 'Image not found with im_name.' }];
      expect(await response.json()).toEqual({ status: 'fail', method: 'remove', error, total: 0, result: [] });
    });

    it(`refuses a body over ${MAX_BODY_BYTES / MB} MB as too large`, async () => {
      const body = new URLSearchParams({ x: 'a'.repeat(MAX_BODY_BYTES) });
      await expectSearchFailure(await call('/uploadsearch', withAuth({ method: 'POST', body })), 'uploadsearch', TOO_LARGE);
      await expectDataFailure(await call('/remove', withAuth({ method: 'POST', body })), 'remove', TOO_LARGE);
    });

    it('refuses a body whose declared length passes the limit before reading it', async () => {
      const { body, pulled } = countedStream(4 * MAX_BODY_BYTES);
      const headers = { ...URLENCODED, 'content-length': String(4 * MAX_BODY_BYTES + 2) };
      const response = await call('/discoversearch', withAuth({ method: 'POST', headers, body }));
      await expectSearchFailure(response, 'discoversearch', TOO_LARGE);
      expect(pulled()).toBeLessThan(MB);
    });

    it('stops reading a body without a length as soon as it passes the limit', async () => {
      const { body, pulled } = countedStream(4 * MAX_BODY_BYTES);
      const response = await call('/discoversearch', withAuth({ method: 'POST', headers: URLENCODED, body }));
      await expectSearchFailure(response, 'discoversearch', TOO_LARGE);
      expect(pulled()).toBeLessThan(MAX_BODY_BYTES + 2 * MB);
    });
  });

  describe('credentials before bodies', () => {
    const UNAUTHENTICATED_URLENCODED = `A request without credentials in a header or the query string may send at most ${UNAUTHENTICATED_BODY.maxUrlencodedBytes / 1024}KB of urlencoded parameters.`;

    it('answers a data endpoint without a Basic header at once, reading none of its body', async () => {
      for (const path of ['/insert', '/remove']) {
        const { body, pulled } = countedStream(4 * MAX_BODY_BYTES);
        await expectDataFailure(await call(path, { method: 'POST', headers: URLENCODED, body }), path.slice(1), 'Unauthorized.');
        expect(pulled(), path).toBeLessThan(MB);
      }
    });

    it('checks wrong Basic credentials, and an app key in the query string, before reading the body', async () => {
      const wrong = basicAuth({ access_key: app.access_key, secret_key: 'wrong' });
      const cases: [string, Record<string, string>][] = [
        ['/insert', wrong],
        ['/discoversearch', wrong],
        ['/discoversearch?access_key=not-a-key', {}],
      ];
      for (const [path, headers] of cases) {
        const { body, pulled } = countedStream(4 * MAX_BODY_BYTES);
        const response = await call(path, { method: 'POST', headers: { ...URLENCODED, ...headers }, body });
        const answer = await response.json<Envelope>();
        expect([response.status, answer.status, answer.error], path).toEqual([200, 'fail', ['Invalid access key or secret key.']]);
        expect(pulled(), path).toBeLessThan(MB);
      }
    });

    it('reads a body that must carry the app key under tight limits: little urlencoded text, few parameters', async () => {
      const { body, pulled } = countedStream(4 * MAX_BODY_BYTES);
      await expectSearchFailure(await call('/uploadsearch', { method: 'POST', headers: URLENCODED, body }), 'uploadsearch', UNAUTHENTICATED_URLENCODED);
      expect(pulled()).toBeLessThan(MB);

      const parts = Array.from({ length: UNAUTHENTICATED_BODY.maxParams + 1 }, (_, k) => `--b\r\n${part(`p${k}`, 'x')}`).join('');
      const manyParts = multipart('b', `${parts}--b--\r\n`);
      const message = `A request without credentials in a header or the query string may send at most ${UNAUTHENTICATED_BODY.maxParams} parameters.`;
      await expectSearchFailure(await call('/uploadsearch', manyParts), 'uploadsearch', message);
      // With credentials in the header the same parts are read: the call then fails on what they say.
      await expectSearchFailure(await call('/uploadsearch', withAuth(manyParts)), 'uploadsearch', EMPTY_COLLECTION);
    });

    it('still takes an app key sent after a 10 MB image in a multipart body, as the JavaScript SDK sends it', async () => {
      const form = new FormData();
      form.append('image', new Blob([new Uint8Array(10 * MB)]), 'photo.jpg');
      form.append('access_key', app.app_key);
      await expectSearchFailure(await call('/uploadsearch', { method: 'POST', body: form }), 'uploadsearch', EMPTY_COLLECTION);
    });

    it('lets /insert carry the spec-sized batch that other endpoints refuse, up to its own limit', async () => {
      // 100 images of 24 values of 5000 characters: 12 MB, within the API's limits (none has an im_name: 107 each).
      const big = new URLSearchParams();
      for (let index = 0; index < 100; index++) for (let key = 0; key < 24; key++) big.append(`f${key}[${index}]`, 'a'.repeat(5000));
      expect(big.toString().length).toBeGreaterThan(MAX_BODY_BYTES);
      const answer = await (await post('/insert', big)).json<{ status: string; error: { error_code: number }[] }>();
      expect(answer.status).toBe('fail');
      expect(answer.error.map((entry) => entry.error_code)).toEqual([...Array<number>(100).fill(107), 104]);
      const tooBig = new URLSearchParams({ x: 'a'.repeat(INSERT_MAX_BODY_BYTES) });
      await expectDataFailure(await post('/insert', tooBig), 'insert', 'The request body exceeds the 20MB limit.');
    });
  });

  describe('parameters', () => {
    const colorsearch = (query: string): Promise<Response> => get(`/colorsearch?${query}`);

    it.each([
      ['/search', 'search', 'Image not found with im_name.'],
      ['/colorsearch', 'colorsearch', 'color is required: a 6-digit hex color, optionally with :ratio.'],
    ])('answers a missing required parameter of %s with its message', async (path, method, message) => {
      await expectSearchFailure(await get(path), method, message);
    });

    it('answers a missing image list with its message', async () => {
      const unindexed = new URLSearchParams({ im_name: 'a' });
      await expectDataFailure(await post('/remove', unindexed), 'remove', 'im_name[0] is required.');
      await expectDataFailure(await post('/insert', new URLSearchParams()), 'insert', 'No image inserted.', 104);
    });

    it.each([
      ['limit=5&limit=6', 'limit'],
      ['page=1&page=1', 'page'],
      ['score=true&score=false', 'score'],
      ['score_min=0.1&score_min=0.2', 'score_min'],
      ['sort_by=price:asc&sort_by=price:desc', 'sort_by'],
      ['group_by=brand&group_by=brand', 'group_by'],
    ])('refuses a single-valued parameter given twice: %s', async (query, name) => {
      const response = await colorsearch(`color=ff0000&${query}`);
      await expectSearchFailure(response, 'colorsearch', `${name} must be given only once.`);
    });

    it('refuses a parameter repeated between the query string and the body', async () => {
      const form = new FormData();
      form.append('limit', '5');
      const response = await post('/uploadsearch?limit=5', form);
      await expectSearchFailure(response, 'uploadsearch', 'limit must be given only once.');
      const names = new URLSearchParams([['im_name[0]', 'a'], ['im_name[0]', 'b']]);
      await expectDataFailure(await post('/remove', names), 'remove', 'im_name[0] must be given only once.');
    });

    it('keeps repeatable parameters repeatable and ignores unknown ones', async () => {
      const query = 'color=ff0000&color=00ff00&fq=brand:a&fq=price:1,2&fl=brand&fl=price&unknown=1&unknown=2&%00=%FF';
      await expectSearchFailure(await colorsearch(query), 'colorsearch', EMPTY_COLLECTION);
    });

    it.each([
      ['1e30', 'limit must be an integer.'],
      ['9007199254740993', 'limit must be between 1 and 1000.'],
      ['-1', 'limit must be between 1 and 1000.'],
      ['0', 'limit must be between 1 and 1000.'],
      ['1.5', 'limit must be an integer.'],
      ['0x10', 'limit must be an integer.'],
      ['1e3', 'limit must be an integer.'],
      ['abc', 'limit must be an integer.'],
      ['NaN', 'limit must be an integer.'],
      ['Infinity', 'limit must be an integer.'],
      ['١٠', 'limit must be an integer.'],
      ['10abc', 'limit must be an integer.'],
      ['- 1', 'limit must be an integer.'],
    ])('refuses limit=%s', async (value, message) => {
      const response = await colorsearch(`color=ff0000&limit=${encodeURIComponent(value)}`);
      await expectSearchFailure(response, 'colorsearch', message);
    });

    it.each([
      ['', 10],
      [' 7 ', 7],
      ['+7', 7],
      ['007', 7],
      ['1000', 1000],
    ])('accepts limit=%j', async (value, limit) => {
      const response = await colorsearch(`color=ff0000&limit=${encodeURIComponent(value)}`);
      await expectSearchFailure(response, 'colorsearch', EMPTY_COLLECTION, { page: 1, limit });
    });

    it.each([
      ['page=1e30', 'page must be an integer.'],
      ['page=1001', 'page must be between 1 and 1000.'],
      ['score_min=1e30', 'score_min must be between 0.0 and 1.0.'],
      ['score_max=-0.5', 'score_max must be between 0.0 and 1.0.'],
      ['score_min=NaN', 'score_min must be between 0.0 and 1.0.'],
      ['score_min=0.9&score_max=0.1', 'score_min must not be greater than score_max.'],
      ['score=yes', 'score must be true or false.'],
      ['group_by=brand&group_limit=101', 'group_limit must be between 1 and 100.'],
      ['facets=brand&facets_limit=1.5', 'facets_limit must be an integer.'],
    ])('refuses %s', async (query, message) => {
      await expectSearchFailure(await colorsearch(`color=ff0000&${query}`), 'colorsearch', message);
    });

    it.each([
      ['error_page=9007199254740992', 'error_page must be between 1 and 9007199254740991.'],
      ['error_page=0', 'error_page must be between 1 and 9007199254740991.'],
      ['error_page=1e3', 'error_page must be an integer.'],
      ['error_limit=101', 'error_limit must be between 1 and 100.'],
      ['error_limit=-1', 'error_limit must be between 1 and 100.'],
    ])('refuses /insert/status with %s', async (query, message) => {
      await expectDataFailure(await get(`/insert/status/1?${query}`), 'insert/status', message);
    });

    it('accepts the largest error_page without overflowing the offset', async () => {
      const response = await get(`/insert/status/1?error_page=${Number.MAX_SAFE_INTEGER}&error_limit=100`);
      await expectDataFailure(response, 'insert/status', TRANSACTION_NOT_FOUND, 101);
    });

    it.each(['abc', '-1', '1.5', '1e3', '0x1', '9007199254740992', '9007199254740993', '99999999999999999999', '%20'])(
      'answers trans_id %s with "Transaction not found"',
      async (transId) => {
        const response = await get(`/insert/status/${transId}`);
        await expectDataFailure(response, 'insert/status', TRANSACTION_NOT_FOUND, 101);
      },
    );

    it.each([
      ['ff0000:1e2', 'Invalid ratio in ff0000:1e2: use an integer from 1 to 100.'],
      ['ff0000:0', 'Invalid ratio in ff0000:0: use an integer from 1 to 100.'],
      ['gggggg', 'Invalid color gggggg: use a 6-digit hex color such as ff0000.'],
      [Array.from({ length: 1000 }, () => 'ff0000').join(','), 'At most 5 colors are allowed.'],
    ])('refuses color=%s', async (color, message) => {
      await expectSearchFailure(await colorsearch(`color=${color}`), 'colorsearch', message);
    });
  });

  describe('filters', () => {
    const fq = (value: string): Promise<Response> => get(`/colorsearch?color=ff0000&fq=${encodeURIComponent(value)}`);

    it('refuses an fq of hundreds of KB by its length, before parsing it', async () => {
      const value = `tag:${'(a OR '.repeat(50_000)}`;
      const response = await post('/uploadsearch', new URLSearchParams({ fq: value }));
      const message = `fq: the parameter is ${value.length} characters long, more than the ${MAX_FQ_LENGTH} allowed.`;
      await expectSearchFailure(response, 'uploadsearch', message);
    });

    it('refuses parentheses nested deeper than the cap without exhausting the stack', async () => {
      const depth = (MAX_FQ_LENGTH - 10) / 2;
      await expectSearchFailure(
        await fq(`tag:${'('.repeat(depth)}a${')'.repeat(depth)}`),
        'colorsearch',
        `fq tag: more than ${MAX_PAREN_DEPTH} nested parentheses at ${MAX_PAREN_DEPTH + 5}.`,
      );
      const message = 'fq brand: expected a value after "(" at 8, found "(".';
      await expectSearchFailure(await fq(`brand:${'('.repeat(depth)}a`), 'colorsearch', message);
    });

    it('accepts parentheses nested up to the cap', async () => {
      const nested = `tag:${'('.repeat(MAX_PAREN_DEPTH)}a${')'.repeat(MAX_PAREN_DEPTH)}`;
      await expectSearchFailure(await fq(nested), 'colorsearch', EMPTY_COLLECTION);
    });

    it('reads a thousand fq parameters on unknown fields, and refuses a hundred thousand at the first past it', async () => {
      const fqs = (count: number): URLSearchParams => new URLSearchParams(Array.from({ length: count }, (_, index) => ['fq', `unknown${index}:x`]));
      await expectSearchFailure(await post('/uploadsearch', fqs(MAX_PARAMS)), 'uploadsearch', EMPTY_COLLECTION);
      await expectSearchFailure(await post('/uploadsearch', fqs(100_000)), 'uploadsearch', `A request may have at most ${MAX_PARAMS} parameters.`);
    });
  });

  describe('data calls counted as their bodies stream', () => {
    const TOO_MANY_PARAMETERS = 'Number of parameters for image exceeds maximum limit of 32.';
    const streamed = (path: string, stream: { body: ReadableStream<Uint8Array> }, type = URLENCODED): Promise<Response> =>
      call(path, withAuth({ method: 'POST', headers: type, body: stream.body }));
    const multipartType = { 'content-type': 'multipart/form-data; boundary=b' };

    it('refuses 19 MB of empty parameters with 105 at the first past 100 images of 32, reading little of it', async () => {
      const flood = streamOf('', () => 'a&');
      await expectDataFailure(await streamed('/insert', flood), 'insert', TOO_MANY_PARAMETERS, 105);
      expect(flood.pulled()).toBeLessThan(MB);
      const nothing = streamOf('', () => '&');
      await expectDataFailure(await streamed('/insert', nothing), 'insert', TOO_MANY_PARAMETERS, 105);
      expect(nothing.pulled()).toBeLessThan(MB);
    });

    it('refuses a multipart body of endless tiny parts the same way', async () => {
      const parts = streamOf('', () => `--b\r\n${part('a', '')}`);
      await expectDataFailure(await streamed('/insert', parts, multipartType), 'insert', TOO_MANY_PARAMETERS, 105);
      expect(parts.pulled()).toBeLessThan(MB);
    });

    it('refuses the 101st image at once: 103 on /insert, the remove limit on /remove', async () => {
      const images = () => streamOf('', (k) => `im_name[${k}]=n${k}&`);
      const inserted = images();
      await expectDataFailure(await streamed('/insert', inserted), 'insert', 'Exceeded maximum insert batch size of 100.', 103);
      expect(inserted.pulled()).toBeLessThan(MB);
      const removed = images();
      await expectDataFailure(await streamed('/remove', removed), 'remove', 'At most 100 images can be removed per call.');
      expect(removed.pulled()).toBeLessThan(MB);
    });

    it('refuses a value longer than any within the limits with 106 naming it, at once', async () => {
      const endless = streamOf('im_name[0]=a&im_url[0]=x&note%5B0%5D=', () => 'y');
      await expectDataFailure(await streamed('/insert', endless), 'insert', 'note[0] exceeds length limit.', 106);
      expect(endless.pulled()).toBeLessThan(MB);
      const inPart = streamOf(`--b\r\nContent-Disposition: form-data; name="note[0]"\r\n\r\n`, () => 'y');
      await expectDataFailure(await streamed('/insert', inPart, multipartType), 'insert', 'note[0] exceeds length limit.', 106);
      expect(inPart.pulled()).toBeLessThan(MB);
    });

    it('refuses a search of more parameters than any search takes, at once', async () => {
      const flood = streamOf('', () => 'fl=a&');
      const response = await streamed('/uploadsearch', flood);
      await expectSearchFailure(response, 'uploadsearch', `A request may have at most ${MAX_PARAMS} parameters.`);
      expect(flood.pulled()).toBeLessThan(MB);
    });
  });

  describe('names', () => {
    it('answers an im_name far longer than any name with "not found", on /search and /remove', async () => {
      const long = 'a'.repeat(MB);
      await expectSearchFailure(await get(`/search?im_name=${long}`), 'search', 'Image not found with im_name.');
      const indexes = Array.from({ length: 100 }, (_, index) => index);
      const names = new URLSearchParams(indexes.map((index) => [`im_name[${index}]`, `${index}${'n'.repeat(30_000)}`]));
      const response = await post('/remove', names);
      expect(response.status).toBe(200);
      type RemoveBody = { status: string; total: number; error: { index: number; error_code: number }[] };
      const body = await response.json<RemoveBody>();
      expect(body).toMatchObject({ status: 'fail', method: 'remove', total: 0, result: [] });
      expect(body.error.map((entry) => [entry.index, entry.error_code])).toEqual(indexes.map((index) => [index, 102]));
    });

    it('refuses a hundred and one names to /remove or /insert', async () => {
      const names = new URLSearchParams(Array.from({ length: 101 }, (_, index) => [`im_name[${index}]`, `n${index}`]));
      const removed = await post('/remove', names);
      await expectDataFailure(removed, 'remove', 'At most 100 images can be removed per call.');
      const inserted = await post('/insert', names);
      await expectDataFailure(inserted, 'insert', 'Exceeded maximum insert batch size of 100.', 103);
    });
  });

  describe('with a collection', () => {
    let stocked: Credentials;
    const upload = (fields: [string, string | Blob][], path = '/uploadsearch'): Promise<Response> => {
      const form = new FormData();
      for (const [name, value] of fields) form.append(name, value);
      return call(path, { method: 'POST', headers: basicAuth(stocked), body: form });
    };

    beforeAll(async () => {
      stocked = await createApp('hostile-stocked');
      await insertAndWait(stocked, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    });

    it('refuses a text parameter sent as a file, rather than reading it as absent', async () => {
      const image = await imageBytes('/images/skimage_coffee.jpg');
      await expectSearchFailure(await upload([['image', image], ['q', new Blob(['red'])]]), 'uploadsearch', 'q must be text, not a file.');
      await expectSearchFailure(await upload([['image', image], ['fl', new Blob(['brand'])]]), 'uploadsearch', 'fl must be text, not a file.');
    });

    it('refuses two image files, and no image source at all', async () => {
      const file = new Blob([new Uint8Array(8)]);
      const twoFiles = await upload([['image', file], ['image', file]]);
      await expectSearchFailure(twoFiles, 'uploadsearch', 'image must be given only once.');
      await expectSearchFailure(await upload([]), 'uploadsearch', NO_SOURCE);
      await expectSearchFailure(await upload([['im_id', 'a'], ['im_url', 'b']]), 'uploadsearch', NO_SOURCE);
    });

    it('keeps nothing of an upload the analysis refuses', async () => {
      const before = await keptQueryImages(stocked);
      const headerOnly = await upload([['image', await imageBytes('/png-header/300x300')]]);
      await expectSearchFailure(headerOnly, 'uploadsearch', 'Invalid image or im_url.');
      const coffee = await imageBytes('/images/skimage_coffee.jpg');
      const outside = await upload([['image', coffee], ['box', '5000,5000,6000,6000']], '/discoversearch');
      await expectSearchFailure(outside, 'discoversearch', 'box is outside the image.');
      expect(await keptQueryImages(stocked)).toEqual(before);
    });

    it('answers an unknown or huge im_id with "not found"', async () => {
      for (const imId of ['0', '-1', 'a'.repeat(MB)]) {
        const response = await upload([['im_id', imId]], '/discoversearch');
        await expectSearchFailure(response, 'discoversearch', 'Image not found with im_id.');
      }
    });

    it.each([
      ['box', '1e3,0,5,5', 'box must be x1,y1,x2,y2: four non-negative integers, no spaces.'],
      ['box', '-1,0,5,5', 'box must be x1,y1,x2,y2: four non-negative integers, no spaces.'],
      ['box', '0, 0,5,5', 'box must be x1,y1,x2,y2: four non-negative integers, no spaces.'],
      ['box', '99999999999,0,5,5', 'box must be x1,y1,x2,y2: four non-negative integers, no spaces.'],
      ['box', '5,5,1,1', 'box must have x1 < x2 and y1 < y2.'],
      ['detection_sensitivity', 'medium', 'detection_sensitivity must be low or high.'],
      ['detection_limit', '31', 'detection_limit must be between 1 and 30.'],
      ['detection_limit', '2.5', 'detection_limit must be an integer.'],
      ['result_limit', '1001', 'result_limit must be between 1 and 1000.'],
      ['point', '1,2,3', 'point must be x,y: two non-negative integers, no spaces.'],
    ])('refuses %s=%s on /discoversearch', async (name, value, message) => {
      const response = await upload([['im_id', 'x'], [name, value]], '/discoversearch');
      await expectSearchFailure(response, 'discoversearch', message);
    });
  });

  describe('routes', () => {
    it.each([
      ['GET', '/insert'],
      ['POST', '/search'],
      ['DELETE', '/remove'],
      ['GET', '/nothing/here'],
      ['GET', '/insert/status/'],
    ])('answers %s %s with the 404 envelope', async (method, path) => {
      const response = await call(path, { method, headers: auth });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ status: 'fail', method: '', error: ['No such endpoint.'] });
    });
  });
});
