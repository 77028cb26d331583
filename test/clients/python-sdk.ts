import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertEnvelope, assertFound, assertSearchFailure, basicHeader, imageFile, multipart, send, type WireAnswer } from './wire.ts';
import { imageNameOf } from '@edge-image-search/devtools/image-names';
import { CATALOG, type ClientStack } from './stack.ts';

/**
 * The official Python SDK (visearch-sdk-python 0.5) as it puts each call on the wire, through `requests`: Basic
 * auth, `X-Requested-With: ViSenze-Python-SDK/<version>`, search parameters hand-joined into the query string with
 * `page=1&limit=30&score_max=1&score_min=0&get_all_fl=False` always there and booleans as `True`/`False`, `im_url`
 * quoted with `/` left as it is, a file upload as multipart with only `image` in the body, `discoversearch` as an
 * urlencoded or multipart POST, inserts, updates and removes as urlencoded POSTs. It raises a bare exception on any
 * HTTP status but 200, so every answer, failures included, must be 200.
 */

const PYTHON_DEFAULTS = 'page=1&limit=30&score_max=1&score_min=0&get_all_fl=False';

/** What `requests` sends besides the SDK's own header. */
const pythonHeaders = (stack: ClientStack, secretKey = stack.keys.secret_key) => ({
  'User-Agent': 'python-requests/2.32.3',
  'Accept-Encoding': 'gzip, deflate',
  Accept: '*/*',
  Connection: 'keep-alive',
  'X-Requested-With': 'ViSenze-Python-SDK/0.5.0',
  Authorization: basicHeader(stack.keys.access_key, secretKey),
});

/** `quote(url)` of Python: everything but letters, digits, `_.-~` and `/` percent-encoded. */
const pythonQuote = (url: string): string => encodeURIComponent(url).replaceAll('%2F', '/');

/** `requests.post(data=dict)`: an urlencoded body, spaces as `+`. */
const formPost = (stack: ClientStack, path: string, fields: [string, string][], secretKey?: string) =>
  send(stack.baseUrl, {
    method: 'POST',
    path,
    headers: { ...pythonHeaders(stack, secretKey), 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

/** `requests.post(files={'image': (basename, file, 'application/octet-stream')}, data=fields)`. */
function filePost(stack: ClientStack, path: string, file: string, fields: [string, string][] = []) {
  const { body, boundary } = multipart(
    [
      ...fields.map(([name, value]) => ({ name, value, headers: [] })),
      { name: 'image', value: imageFile(file), filename: file, headers: ['Content-Type: application/octet-stream'] },
    ],
    randomHex(32),
  );
  return send(stack.baseUrl, { method: 'POST', path, headers: { ...pythonHeaders(stack), 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body });
}

const randomHex = (length: number): string => Array.from({ length }, () => Math.floor(Math.random() * 16).toString(16)).join('');

const get = (stack: ClientStack, path: string) => send(stack.baseUrl, { method: 'GET', path, headers: pythonHeaders(stack) });

async function waitForTransaction(stack: ClientStack, transId: unknown): Promise<WireAnswer> {
  for (let tries = 0; tries < 600; tries++) {
    const answer = await get(stack, `/insert/status/${transId}`);
    assertEnvelope(answer, 'insert/status');
    const [status] = answer.body.result as { processed_percent: number }[];
    if (status?.processed_percent === 100) return answer;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`transaction ${transId} did not finish`);
}

export function pythonSdkSuite(stack: () => ClientStack): void {
  describe('the Python SDK, replayed as it sends each call', () => {
    it('search and recommendation: GET with its defaults, fl repeated, fq, score=True', async () => {
      for (const path of ['/search', '/recommendation']) {
        const query = `im_name=opencv-doc_plant&${PYTHON_DEFAULTS}&fl=brand&fl=price&fq=category:plant%20OR%20bird&score=True`;
        const result = assertFound(await get(stack(), `${path}?${query}`), 'search');
        assert.deepEqual(result.map((item) => item.im_name).sort(), ['animals_birds_hen', 'animals_birds_rooster', 'opencv-doc_aloeL']);
        for (const item of result) {
          assert.ok(typeof item.score === 'number' && item.score > 0 && item.score <= 1);
          assert.deepEqual(Object.keys(item.value_map ?? {}).sort(), ['brand', 'price']);
        }
      }
    });

    it('colorsearch: GET with its defaults', async () => {
      const result = assertFound(await get(stack(), `/colorsearch?color=8cc63f&${PYTHON_DEFAULTS}`), 'colorsearch');
      const names = new Set(result.map((item) => item.im_name));
      assert.ok(CATALOG.every(([file]) => names.has(imageNameOf(file))), JSON.stringify(result));
    });

    it('uploadsearch by file: multipart with only the image, every parameter in the query string', async () => {
      const answer = await filePost(stack(), `/uploadsearch?${PYTHON_DEFAULTS}&score=True&fl=brand`, 'opencv-doc_plant.jpg');
      const [first] = assertFound(answer, 'uploadsearch');
      assert.deepEqual(first, { im_name: 'opencv-doc_plant', score: 1, value_map: { brand: 'greenhouse' } });
      assert.equal(answer.body.limit, 30);
      assert.match(String(answer.body.im_id), /^[0-9a-f]{32}$/);
    });

    it('uploadsearch by URL: a GET with the URL quoted', async () => {
      const url = pythonQuote(`${stack().imagesUrl}/animals_birds_hen.png`);
      const [first] = assertFound(await get(stack(), `/uploadsearch?im_url=${url}&${PYTHON_DEFAULTS}&score=True`), 'uploadsearch');
      assert.equal(first?.im_name, 'animals_birds_hen');
      assert.ok((first?.score ?? 0) > 0.999);
    });

    it('discoversearch by URL, by im_id (urlencoded) and by file (multipart), with its detection defaults', async () => {
      const defaults: [string, string][] = [['detection', 'all'], ['detection_limit', '5'], ['detection_sensitivity', 'low'], ['result_limit', '10']];
      const byUrl = await formPost(stack(), '/discoversearch', [['im_url', `${stack().imagesUrl}/opencv-doc_plant.jpg`], ...defaults]);
      const byFile = await filePost(stack(), '/discoversearch', 'opencv-doc_plant.jpg', defaults);
      const byId = await formPost(stack(), '/discoversearch', [['im_id', String(byFile.body.im_id)], ...defaults]);
      for (const answer of [byUrl, byFile, byId]) {
        assertEnvelope(answer, 'discoversearch');
        assert.equal(answer.body.status, 'OK', JSON.stringify(answer.body));
        assert.deepEqual([answer.body.result_limit, answer.body.detection_limit], [10, 5]);
        const objects = answer.body.objects as { type: string; result: { im_name: string }[] }[];
        assert.equal(objects[0]?.type, 'Vase and Pot');
        assert.equal(objects[0]?.result[0]?.im_name, 'opencv-doc_plant');
      }
    });

    it('insert, insert_status (no error paging sent) and remove: urlencoded POSTs and a bare GET', async () => {
      const inserted = await formPost(stack(), '/insert', [
        ['im_name[0]', 'python-kiwi'],
        ['im_url[0]', `${stack().imagesUrl}/food_fruit_kiwi.png`],
        ['brand[0]', 'grocer'],
        ['price[0]', '130.0'],
      ]);
      assertEnvelope(inserted, 'insert');
      assert.deepEqual([inserted.body.status, inserted.body.total, inserted.body.error], ['OK', 1, []]);
      const status = await waitForTransaction(stack(), inserted.body.trans_id);
      assert.deepEqual(status.body.status, 'OK');
      assert.deepEqual((status.body.result as { success_count: number }[])[0]?.success_count, 1);

      const removed = await formPost(stack(), '/remove', [['im_name[0]', 'python-kiwi'], ['im_name[1]', 'b']]);
      assertEnvelope(removed, 'remove');
      assert.deepEqual(removed.body, {
        status: 'warning',
        method: 'remove',
        total: 1,
        result: [],
        error: [{ index: 1, im_name: 'b', error_code: 102, error_message: 'Image not found with im_name.' }],
      });
    });

    it('insert naming a field outside the schema: OK, the JSON handed on with ignored_fields', async () => {
      const inserted = await formPost(stack(), '/insert', [
        ['im_name[0]', 'python-ignored'],
        ['im_url[0]', `${stack().imagesUrl}/no-such-file.png`],
        ['colour[0]', 'green'],
      ]);
      assertEnvelope(inserted, 'insert');
      assert.deepEqual([inserted.body.status, inserted.body.total, inserted.body.error], ['OK', 1, []]);
      assert.deepEqual(inserted.body.ignored_fields, [{ index: 0, im_name: 'python-ignored', fields: ['colour'] }]);
      await waitForTransaction(stack(), inserted.body.trans_id);
    });

    it('error paths answer 200 with the message, as the SDK\'s fixtures show', async () => {
      const wrongKeys = await formPost(stack(), '/insert', [['im_name[0]', 'a'], ['im_url[0]', 'http://127.0.0.1/a.jpg']], 'wrong');
      assertEnvelope(wrongKeys, 'insert');
      assert.deepEqual(wrongKeys.body, { status: 'fail', method: 'insert', error: ['Invalid access key or secret key.'], total: 0, result: [] });

      assertSearchFailure(await get(stack(), `/search?im_name=no-such-image&${PYTHON_DEFAULTS}`), 'search', 'Image not found with im_name.');
      const notFound = await get(stack(), `/search?im_name=no-such-image&${PYTHON_DEFAULTS}`);
      assert.deepEqual([notFound.body.page, notFound.body.limit], [1, 30]);
      assertSearchFailure(await get(stack(), `/colorsearch?color=red&${PYTHON_DEFAULTS}`), 'colorsearch', 'Invalid color red: use a 6-digit hex color such as ff0000.');
      assertSearchFailure(await get(stack(), `/uploadsearch?im_url=${pythonQuote(`${stack().imagesUrl}/manifest.json`)}&${PYTHON_DEFAULTS}`), 'uploadsearch', 'Invalid image file format.');
      assertSearchFailure(await get(stack(), `/search?im_name=opencv-doc_plant&${PYTHON_DEFAULTS.replace('score_max=1', 'score_max=1.5')}`), 'search', 'score_max must be between 0.0 and 1.0.');

      const unknownTransaction = await get(stack(), '/insert/status/123');
      assertEnvelope(unknownTransaction, 'insert/status');
      assert.deepEqual(unknownTransaction.body, {
        status: 'fail',
        method: 'insert/status',
        error: [{ error_code: 101, error_message: 'Transaction not found with trans_id.' }],
        result: [],
      });

      const invalid = await formPost(stack(), '/insert', [['im_name[0]', 'not valid name'], ['im_url[0]', 'http://127.0.0.1/a.jpg']]);
      assertEnvelope(invalid, 'insert');
      assert.deepEqual(invalid.body, {
        status: 'fail',
        method: 'insert',
        total: 0,
        result: [],
        error: [
          { index: 0, im_name: 'not valid name', error_code: 107, error_message: 'Invalid im_name.' },
          { error_code: 104, error_message: 'No image inserted.' },
        ],
      });
    });

    it('update: a metadata-only insert reaches fl, fq, facets and group_by at 100 %, without inference', async () => {
      const search = async (query: string) => assertFound(await get(stack(), `/search?im_name=animals_birds_hen&${PYTHON_DEFAULTS}&${query}`), 'search');
      const before = await search('fl=brand&fl=price&fq=category:bird');
      assert.deepEqual(before, [{ im_name: 'animals_birds_rooster', value_map: { brand: 'farm', price: '8' } }]);

      const predictions = stack().inference.predictions();
      const updated = await formPost(stack(), '/insert', [
        ['im_name[0]', 'animals_birds_rooster'],
        ['brand[0]', 'coop'],
        ['price[0]', '42.5'],
      ]);
      assertEnvelope(updated, 'insert');
      assert.deepEqual([updated.body.status, updated.body.total, updated.body.error], ['OK', 1, []]);
      const status = await waitForTransaction(stack(), updated.body.trans_id);
      const [settled] = status.body.result as { success_count: number; fail_count: number }[];
      assert.deepEqual([settled?.success_count, settled?.fail_count], [1, 0]);
      assert.equal(stack().inference.predictions(), predictions, 'the update called the inference service');

      // The given fields changed, the others stayed (category is still bird), and each reader sees the new values.
      assert.deepEqual(await search('fl=brand&fl=price&fl=category&fq=category:bird'), [
        { im_name: 'animals_birds_rooster', value_map: { brand: 'coop', category: 'bird', price: '42.5' } },
      ]);
      assert.deepEqual((await search('fq=brand:coop&fq=price:40,45')).map((item) => item.im_name), ['animals_birds_rooster']);
      assert.deepEqual(await search('fq=brand:farm&fq=category:bird'), []);
      const faceted = await get(stack(), `/search?im_name=animals_birds_hen&${PYTHON_DEFAULTS}&fq=category:bird&facets=brand,price&facets_show_count=True`);
      assert.deepEqual(faceted.body.facets, [
        { key: 'brand', items: [{ value: 'coop', count: 1 }] },
        { key: 'price', range: { min: 42.5, max: 42.5 } },
      ]);
      const grouped = await get(stack(), `/search?im_name=animals_birds_hen&${PYTHON_DEFAULTS}&fq=category:bird&group_by=brand`);
      assert.deepEqual(grouped.body.group_results, [{ group_by_value: 'coop', result: [{ im_name: 'animals_birds_rooster' }] }]);

      const unknown = await formPost(stack(), '/insert', [['im_name[0]', 'no-such-image'], ['brand[0]', 'coop']]);
      assertEnvelope(unknown, 'insert');
      assert.deepEqual(unknown.body.error, [
        { index: 0, im_name: 'no-such-image', error_code: 108, error_message: 'Missing im_url.' },
        { error_code: 104, error_message: 'No image inserted.' },
      ]);
    });
  });
}
