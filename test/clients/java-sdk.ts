import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { assertEnvelope, basicHeader, imageFile, multipart, send, type WireAnswer } from './wire.ts';
import type { ClientStack } from './stack.ts';

/**
 * The official Java SDK (visearch-java-sdk 1.13) as it puts each call on the wire, through Apache HttpClient: Basic
 * auth, `X-Requested-With: visearch-java-sdk/<version>` and its long User-Agent; only the parameters a caller set,
 * booleans `true`; GETs with form-encoded query strings; image URLs and `im_id`s as urlencoded POSTs; files as strict
 * multipart (every parameter a text part with `Content-Transfer-Encoding`, a stream named `image-stream` with no
 * extension). Its answers are checked as its Jackson parsing reads them.
 */

const JAVA_HEADERS = {
  'User-Agent': 'visearch-java-sdk/1.13.2 Linux/6.1.0 OpenJDK 64-Bit Server VM/17.0.15+6/17.0.15/en',
  'X-Requested-With': 'visearch-java-sdk/1.13.2',
  Connection: 'Keep-Alive',
  'Accept-Encoding': 'gzip,deflate',
};

/** Keys the SDK's strict Jackson mappings accept (no `ignoreUnknown`): any other makes it fail to parse. */
const OBJECT_KEYS = ['type', 'score', 'box', 'attributes', 'total', 'result'];
const INSERT_ERROR_KEYS = ['im_name', 'index', 'error_code', 'error_message'];

const onlyKeys = (entry: unknown, allowed: string[], what: string): void => {
  assert.ok(typeof entry === 'object' && entry !== null, `${what}: ${JSON.stringify(entry)} is not an object`);
  for (const key of Object.keys(entry)) assert.ok(allowed.includes(key), `${what}: the SDK cannot map "${key}"`);
};

/**
 * What the SDK's search operations require (SearchOperationsImpl, BaseViSearchOperations): `status`; when it is not
 * `OK`, a non-empty `error` whose first entry is text (an object reads as ""); `method`; `page`, `limit` and `total`
 * (the classic versions); `result` an array; `objects` entries with only the keys ObjectSearchResult maps.
 */
function assertJavaSearch(answer: WireAnswer): string | null {
  const { body } = answer;
  assert.equal(typeof body.status, 'string');
  assert.equal(typeof body.method, 'string');
  if (body.status !== 'OK') {
    assert.equal(typeof body.error[0], 'string', 'the message the SDK reports is error[0] as text');
    assert.notEqual(body.error[0], '');
  }
  const paged = 'objects' in body ? ['page'] : ['page', 'limit', 'total'];
  for (const key of paged) assert.ok(Number.isInteger(body[key]), `${key} in ${JSON.stringify(body)}`);
  if ('result' in body) assert.ok(Array.isArray(body.result));
  for (const object of (body.objects as unknown[] | undefined) ?? []) onlyKeys(object, OBJECT_KEYS, 'objects[]');
  for (const object of [...((body.objects as object[] | undefined) ?? []), ...((body.product_types as object[] | undefined) ?? [])]) {
    assertListMap((object as { attributes?: unknown }).attributes, 'attributes');
  }
  for (const entry of [...((body.object_types_list as object[] | undefined) ?? []), ...((body.product_types_list as object[] | undefined) ?? [])]) {
    assertListMap((entry as { attributes_list?: unknown }).attributes_list, 'attributes_list');
  }
  return body.status === 'OK' ? null : (body.error[0] as string);
}

/** ProductType and ObjectSearchResult read `attributes` and `attributesList` as Map<String, List<String>>: a bare string fails. */
function assertListMap(value: unknown, what: string): void {
  if (value === undefined) return;
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `${what}: ${JSON.stringify(value)} is not a map`);
  for (const [name, values] of Object.entries(value)) {
    assert.ok(Array.isArray(values) && values.every((item) => typeof item === 'string'), `${what}.${name}: ${JSON.stringify(values)} is not a list of strings`);
  }
}

const get = (stack: ClientStack, path: string, query: [string, string][]) =>
  send(stack.baseUrl, {
    method: 'GET',
    // URIBuilder form-encodes: spaces as +.
    path: `${path}?${new URLSearchParams(query)}`,
    headers: { ...JAVA_HEADERS, Authorization: basicHeader(stack.keys.access_key, stack.keys.secret_key) },
  });

const formPost = (stack: ClientStack, path: string, fields: [string, string][]) =>
  send(stack.baseUrl, {
    method: 'POST',
    path,
    headers: {
      ...JAVA_HEADERS,
      Authorization: basicHeader(stack.keys.access_key, stack.keys.secret_key),
      'Content-Type': 'application/x-www-form-urlencoded; charset=UTF-8',
    },
    body: new URLSearchParams(fields).toString(),
  });

/** MultipartEntityBuilder in STRICT mode: text parts, then the stream as `image-stream`. */
function streamPost(stack: ClientStack, path: string, image: Buffer, fields: [string, string][]) {
  const { body, boundary } = multipart([
    ...fields.map(([name, value]) => ({
      name,
      value,
      headers: ['Content-Type: text/plain; charset=UTF-8', 'Content-Transfer-Encoding: 8bit'],
    })),
    { name: 'image', value: image, filename: 'image-stream', headers: ['Content-Type: application/octet-stream', 'Content-Transfer-Encoding: binary'] },
  ]);
  return send(stack.baseUrl, {
    method: 'POST',
    path,
    headers: { ...JAVA_HEADERS, Authorization: basicHeader(stack.keys.access_key, stack.keys.secret_key), 'Content-Type': `multipart/form-data; boundary=${boundary}; charset=UTF-8` },
    body,
  });
}

export function javaSdkSuite(stack: () => ClientStack): void {
  describe('the Java SDK, replayed as it sends each call', () => {
    it('search, recommendation and colorSearch: only what was set, fl repeated, booleans true', async () => {
      for (const path of ['/search', '/recommendation']) {
        const answer = await get(stack(), path, [['im_name', 'opencv-doc_plant'], ['limit', '4'], ['score', 'true'], ['fl', 'brand'], ['fl', 'category'], ['fq', 'category:plant OR bird']]);
        assertEnvelope(answer, 'search');
        assert.equal(assertJavaSearch(answer), null);
        const result = answer.body.result as { im_name: string; score: number; value_map: Record<string, string> }[];
        assert.equal(result.length, 3);
        assert.ok(result.every((item) => typeof item.score === 'number' && typeof item.value_map.category === 'string'));
      }
      // The SDK checks the colour against ^[0-9a-fA-F]{6}$ only: capitals reach the service.
      const color = await get(stack(), '/colorsearch', [['color', '8CC63F'], ['get_all_fl', 'true']]);
      assertEnvelope(color, 'colorsearch');
      assert.equal(assertJavaSearch(color), null);
      assert.equal((color.body.result as { value_map: Record<string, string> }[])[0]?.value_map.brand !== undefined, true);
    });

    it('uploadSearch from a stream (image-stream, strict multipart), then by im_id and by im_url as urlencoded POSTs', async () => {
      const byStream = await streamPost(stack(), '/uploadsearch', imageFile('opencv-doc_plant.jpg'), [['limit', '3'], ['score', 'true'], ['detection', 'all']]);
      assertEnvelope(byStream, 'uploadsearch');
      assert.equal(assertJavaSearch(byStream), null);
      assert.deepEqual((byStream.body.result as unknown[])[0], { im_name: 'opencv-doc_plant', score: 1 });

      const byId = await formPost(stack(), '/uploadsearch', [['im_id', String(byStream.body.im_id)], ['limit', '3'], ['score', 'true']]);
      assertEnvelope(byId, 'uploadsearch');
      assert.equal(assertJavaSearch(byId), null);
      assert.deepEqual(byId.body.result, byStream.body.result);

      const byUrl = await formPost(stack(), '/uploadsearch', [['im_url', `${stack().imagesUrl}/animals_birds_hen.png`], ['box', '0,0,300,300']]);
      assertEnvelope(byUrl, 'uploadsearch');
      assert.equal(assertJavaSearch(byUrl), null);
    });

    it('discoverSearch by stream and by URL: objects carry only what ObjectSearchResult maps', async () => {
      const png = await sharp(imageFile('opencv-doc_plant.jpg')).png().toBuffer();
      const byStream = await streamPost(stack(), '/discoversearch', png, [['detection_limit', '2'], ['result_limit', '3']]);
      const byUrl = await formPost(stack(), '/discoversearch', [['im_url', `${stack().imagesUrl}/opencv-doc_plant.jpg`]]);
      for (const answer of [byStream, byUrl]) {
        assertEnvelope(answer, 'discoversearch');
        assert.equal(assertJavaSearch(answer), null);
        assert.equal((answer.body.objects as { type: string }[])[0]?.type, 'Vase and Pot');
      }
    });

    it('insert, insertStatus with error paging, and remove, as the data operations parse them', async () => {
      const inserted = await formPost(stack(), '/insert', [
        ['im_name[0]', 'java-kiwi'],
        ['im_url[0]', `${stack().imagesUrl}/food_fruit_kiwi.png`],
        ['price[0]', '3.5'],
        ['im_name[1]', 'java bad name'],
        ['im_url[1]', `${stack().imagesUrl}/food_fruit_kiwi.png`],
        ['im_name[2]', 'java-missing'],
        ['im_url[2]', `${stack().imagesUrl}/no-such-file.png`],
      ]);
      assertEnvelope(inserted, 'insert');
      assert.deepEqual([inserted.body.status, inserted.body.total], ['warning', 2]);
      for (const entry of inserted.body.error) onlyKeys(entry, INSERT_ERROR_KEYS, 'insert error');
      assert.ok(Number.isSafeInteger(inserted.body.trans_id));

      let status: WireAnswer;
      for (;;) {
        status = await get(stack(), `/insert/status/${inserted.body.trans_id}`, [['error_page', '1'], ['error_limit', '10']]);
        assertEnvelope(status, 'insert/status');
        if ((status.body.result as { processed_percent: number }[])[0]?.processed_percent === 100) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const [transaction] = status.body.result as { start_time: string; update_time: string; error_list: unknown[]; success_count: number; fail_count: number; error_page: number; error_limit: number }[];
      assert.ok(transaction);
      // Jackson's StdDateFormat reads these as java.util.Date.
      for (const time of [transaction.start_time, transaction.update_time]) assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
      assert.deepEqual([transaction.success_count, transaction.fail_count, transaction.error_page, transaction.error_limit], [1, 1, 1, 10]);
      assert.deepEqual(transaction.error_list, [{ im_name: 'java-missing', error_code: 201, error_message: 'Could not download the image from im_url.' }]);
      for (const entry of transaction.error_list) onlyKeys(entry, INSERT_ERROR_KEYS, 'error_list');

      const unknown = await get(stack(), '/insert/status/42', [['error_page', '1'], ['error_limit', '10']]);
      assertEnvelope(unknown, 'insert/status');
      assert.equal(unknown.body.status, 'fail');
      assert.ok((unknown.body.error as unknown[]).length > 0, 'a failed status needs a non-empty error');

      for (const [names, expected] of [
        [['java-kiwi'], 'OK'],
        [['java-kiwi'], 'fail'],
      ] as const) {
        const removed = await formPost(stack(), '/remove', names.map((name, index) => [`im_name[${index}]`, name]));
        assertEnvelope(removed, 'remove');
        assert.equal(removed.body.status, expected);
        assert.ok(Number.isInteger(removed.body.total), 'RemoveStatus needs status and total');
        if (expected === 'fail') assert.deepEqual(removed.body.error, [{ index: 0, im_name: 'java-kiwi', error_code: 102, error_message: 'Image not found with im_name.' }]);
      }
    });

    it('insert naming a field outside the schema: OK, with ignored_fields, a key InsertTrans skips', async () => {
      // InsertTransMixin is @JsonIgnoreProperties(ignoreUnknown = true): it maps trans_id, total and error only.
      const inserted = await formPost(stack(), '/insert', [
        ['im_name[0]', 'java-ignored'],
        ['im_url[0]', `${stack().imagesUrl}/no-such-file.png`],
        ['brand[0]', 'grocer'],
        ['colour[0]', 'green'],
      ]);
      assertEnvelope(inserted, 'insert');
      assert.deepEqual([inserted.body.status, inserted.body.total, inserted.body.error], ['OK', 1, []]);
      assert.ok(Number.isSafeInteger(inserted.body.trans_id));
      assert.deepEqual(inserted.body.ignored_fields, [{ index: 0, im_name: 'java-ignored', fields: ['colour'] }]);
    });

    it('error paths: the message the SDK reports is the service\'s own', async () => {
      const cases: [Promise<WireAnswer>, string, string][] = [
        [get(stack(), '/search', [['im_name', 'no-such-image']]), 'search', 'Image not found with im_name.'],
        [get(stack(), '/colorsearch', [['color', '12345G']]), 'colorsearch', 'Invalid color 12345G: use a 6-digit hex color such as ff0000.'],
        [formPost(stack(), '/uploadsearch', [['im_id', 'ffffffffffffffffffffffffffffffff']]), 'uploadsearch', 'Image not found with im_id.'],
        [formPost(stack(), '/discoversearch', [['im_url', `${stack().imagesUrl}/manifest.json`]]), 'discoversearch', 'Invalid image file format.'],
        [streamPost(stack(), '/uploadsearch', Buffer.from('not an image'), []), 'uploadsearch', 'Invalid image file format.'],
      ];
      for (const [pending, method, message] of cases) {
        const answer = await pending;
        assertEnvelope(answer, method);
        assert.equal(assertJavaSearch(answer), message);
      }
      const wrongKeys = await send(stack().baseUrl, { method: 'GET', path: '/search?im_name=opencv-doc_plant', headers: { ...JAVA_HEADERS, Authorization: basicHeader(stack().keys.access_key, 'wrong') } });
      assertEnvelope(wrongKeys, 'search');
      assert.equal(assertJavaSearch(wrongKeys), 'Invalid access key or secret key.');
    });
  });
}
