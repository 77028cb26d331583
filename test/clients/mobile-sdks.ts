import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import sharp from 'sharp';
import { assertEnvelope, assertFound, assertSearchFailure, imageFile, multipart, send } from './wire.ts';
import type { ClientStack } from './stack.ts';

/**
 * The official Android SDK (visearch-android 1.x, its Volley and Retrofit transports) and iOS SDKs (Objective-C and
 * Swift) as they put each search on the wire, with an app key: `access_key` in the query string or as a form part,
 * no Authorization header, `limit=10&page=1` always, photos resized to at most 1024 px and re-encoded as JPEG.
 * Android's Volley transport reads nothing but a 2xx answer, and then needs `total`, `page`, `limit` and `result`
 * even in a failure; the iOS SDKs look `X-Log-ID` up case-sensitively.
 */

const ANDROID = { 'X-Requested-With': 'visearch-android-sdk/1.6.2', 'User-Agent': 'Dalvik/2.1.0 (Linux; U; Android 13; Pixel 7 Build/TQ3A.230901.001)' };
const IOS = { 'X-Requested-With': 'visearch-swift-sdk/1.4.3', 'User-Agent': 'Shop/2.0 CFNetwork/1410.0.3 Darwin/22.6.0' };

/** Android's Uri.Builder.appendQueryParameter: everything but unreserved characters percent-encoded, `,` and `:` too. */
const androidQuery = (query: [string, string][]): string => query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');

export function mobileSdksSuite(stack: () => ClientStack): void {
  /** The photo as the SDKs upload it: fitted in 1024 x 1024 and re-encoded as JPEG. */
  let photo: Buffer;
  before(async () => {
    photo = await sharp(imageFile('opencv-doc_plant.jpg')).resize(1024, 1024, { fit: 'inside', withoutEnlargement: true }).jpeg({ quality: 98 }).toBuffer();
  });

  describe('the Android SDK, replayed as it sends each search', () => {
    const get = (path: string, query: [string, string][]) =>
      send(stack().baseUrl, { method: 'GET', path: `${path}?${androidQuery([['limit', '10'], ['page', '1'], ...query, ['access_key', stack().keys.app_key]])}`, headers: ANDROID });

    it('search, recommendation and colorsearch: GETs with the app key', async () => {
      for (const path of ['/search', '/recommendation']) {
        const result = assertFound(await get(path, [['im_name', 'opencv-doc_plant'], ['fl', 'brand'], ['score', 'true']]), 'search');
        assert.ok(result.length > 0 && result.every((item) => item.value_map?.brand !== undefined && item.score !== undefined));
      }
      assert.equal(assertFound(await get('/colorsearch', [['color', '8cc63f']]), 'colorsearch').length, 8);
    });

    it('uploadsearch by URL and by im_id: GETs, the URL and the box percent-encoded', async () => {
      const byUrl = await get('/uploadsearch', [['im_url', `${stack().imagesUrl}/opencv-doc_plant.jpg`]]);
      assert.equal(assertFound(byUrl, 'uploadsearch')[0]?.im_name, 'opencv-doc_plant');
      const byId = await get('/uploadsearch', [['im_id', String(byUrl.body.im_id)], ['box', '150,150,400,333'], ['qinfo', 'true']]);
      assert.ok(assertFound(byId, 'uploadsearch').length > 0);
      assert.equal((byId.body.qinfo as { im_id: string }).im_id, byUrl.body.im_id);
    });

    it('uploadsearch with a photo (Volley): strict multipart, every parameter and the app key as text parts, the file named "image"', async () => {
      const text = ['Content-Type: text/plain; charset=ISO-8859-1', 'Content-Transfer-Encoding: 8bit'];
      const { body, boundary } = multipart([
        ...[['limit', '10'], ['page', '1'], ['score', 'true'], ['access_key', stack().keys.app_key]].map(([name, value]) => ({ name: name!, value: value!, headers: text })),
        { name: 'image', value: photo, filename: 'image', headers: ['Content-Type: application/octet-stream', 'Content-Transfer-Encoding: binary'] },
      ]);
      const answer = await send(stack().baseUrl, { method: 'POST', path: '/uploadsearch', headers: { ...ANDROID, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body });
      const [first] = assertFound(answer, 'uploadsearch');
      assert.equal(first?.im_name, 'opencv-doc_plant');
      assert.ok((first?.score ?? 0) > 0.95);
    });

    it('discoversearch (Retrofit): a photo with text parts, and by im_id with the parameters in the query string and an empty body', async () => {
      const text = ['Content-Transfer-Encoding: binary', 'Content-Type: text/plain; charset=utf-8'];
      const { body, boundary } = multipart([
        ...[['limit', '10'], ['page', '1'], ['access_key', stack().keys.app_key]].map(([name, value]) => ({ name: name!, value: value!, headers: text })),
        { name: 'image', value: photo, filename: 'image', headers: ['Content-Type: image/*'] },
      ]);
      const byPhoto = await send(stack().baseUrl, { method: 'POST', path: '/discoversearch', headers: { ...ANDROID, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body });
      const byId = await send(stack().baseUrl, {
        method: 'POST',
        path: `/discoversearch?${androidQuery([['limit', '10'], ['page', '1'], ['im_id', String(byPhoto.body.im_id)], ['access_key', stack().keys.app_key]])}`,
        headers: ANDROID,
        body: '',
      });
      for (const answer of [byPhoto, byId]) {
        assertEnvelope(answer, 'discoversearch');
        assert.equal(answer.body.status, 'OK', JSON.stringify(answer.body));
        assert.equal((answer.body.objects as { type: string }[])[0]?.type, 'Vase and Pot');
      }
    });

    it('failures come back readable: HTTP 200 with the message, total, page, limit and result', async () => {
      assertSearchFailure(await get('/search', [['im_name', 'no-such-image']]), 'search', 'Image not found with im_name.');
      assertSearchFailure(await get('/colorsearch', [['color', 'ff00']]), 'colorsearch', 'Invalid color ff00: use a 6-digit hex color such as ff0000.');
      const wrongKey = await send(stack().baseUrl, { method: 'GET', path: `/search?${androidQuery([['im_name', 'opencv-doc_plant'], ['access_key', 'unknown']])}`, headers: ANDROID });
      assertSearchFailure(wrongKey, 'search', 'Invalid access key or secret key.');
    });
  });

  describe('the iOS SDKs, replayed as they send each search', () => {
    /** Both iOS SDKs always POST upload searches, every parameter in the query string. */
    const iosQuery = (query: [string, string][]) =>
      androidQuery([['get_all_fl', 'false'], ['limit', '10'], ['page', '1'], ['score', 'true'], ['score_max', '1.000000'], ['score_min', '0.000000'], ...query, ['access_key', stack().keys.app_key]]);

    it('uploadsearch with a photo: only the image in the body, as image.jpeg', async () => {
      const boundary = 'visearch.boundary.4f1c2a9b07d3e6a1';
      const body = Buffer.concat([
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="image.jpeg"\r\nContent-Type: image/jpeg\r\n\r\n`),
        photo,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const answer = await send(stack().baseUrl, { method: 'POST', path: `/uploadsearch?${iosQuery([])}`, headers: { ...IOS, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body });
      assert.equal(assertFound(answer, 'uploadsearch')[0]?.im_name, 'opencv-doc_plant');
    });

    it('uploadsearch and discoversearch by URL: a multipart body with no part at all', async () => {
      for (const [path, ending] of [['/uploadsearch', ''], ['/discoversearch', '\r\n']] as const) {
        // Objective-C sends the closing delimiter alone; Swift a CRLF before it.
        const boundary = 'Boundary-8D3E1F4A-2B6C-4E7D-9A1B-3C5D7E9F0A2B';
        const answer = await send(stack().baseUrl, {
          method: 'POST',
          path: `${path}?&${iosQuery([['im_url', `${stack().imagesUrl}/animals_birds_hen.png`]])}`,
          headers: { ...IOS, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
          body: `${ending}--${boundary}--\r\n`,
        });
        assertEnvelope(answer, path.slice(1));
        assert.equal(answer.body.status, 'OK', JSON.stringify(answer.body));
      }
    });
  });
}
