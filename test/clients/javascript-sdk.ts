import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import type { ClientStack } from './stack.ts';

/**
 * The official JavaScript SDK 1.5.2 from npm, unchanged, in Node: its every search call, with an app key and with
 * access and secret keys, error paths included. It reads answers whatever their HTTP status and takes `reqid` from
 * the `X-Log-ID` header; on an `OK` answer it reports the call to its tracking endpoint, here a local sink.
 */

type Answer = { status: string; method: string; error: unknown[]; reqid: string; [field: string]: unknown };
type Call = (params: Record<string, unknown>, options: Record<string, unknown>, callback: (json: Answer) => void, failure: (error: unknown) => void) => void;
type Sdk = { set(name: string, value: unknown): void } & Record<'search' | 'recommendation' | 'uploadsearch' | 'discoversearch' | 'colorsearch', Call>;

const require = createRequire(import.meta.url);

/** Runs one SDK call and resolves with what its callback received; its failure callback rejects. */
const run = (sdk: Sdk, method: keyof Omit<Sdk, 'set'>, params: Record<string, unknown>): Promise<Answer> =>
  new Promise((resolve, reject) => sdk[method](params, {}, resolve, reject));

/**
 * A file for the SDK's `image` parameter in Node: what it reads is `image.files[0]`, which form-data streams. Its
 * POSTs go through form-data, which takes strings and numbers only: a flag is `'true'` there.
 */
const fileInput = (file: string) => ({ files: [createReadStream(path.join(IMAGES_DIR, file))] });

export function javascriptSdkSuite(stack: () => ClientStack): void {
  describe('the JavaScript SDK 1.5.2 in Node', () => {
    let sdk: Sdk;
    let sink: http.Server;
    const tracked: URLSearchParams[] = [];

    before(async () => {
      sdk = require('visearch-javascript-sdk') as Sdk;
      const port = await freePort();
      sink = http.createServer((request, response) => {
        tracked.push(new URL(request.url ?? '/', 'http://sink').searchParams);
        response.writeHead(200, { 'content-type': 'image/gif' }).end();
      });
      await new Promise<void>((resolve) => sink.listen(port, '127.0.0.1', resolve));
      sdk.set('endpoint', `${stack().baseUrl}/`);
      sdk.set('track_end_point', `http://127.0.0.1:${port}/`);
      // Upload searches run the vision models on this machine's CPU: more than the SDK's 15 s default under load.
      sdk.set('timeout', 120_000);
    });
    after(async () => {
      sink.closeAllConnections();
      await new Promise((resolve) => sink.close(resolve));
    });

    const credentials = {
      'an app key': () => {
        sdk.set('app_key', stack().keys.app_key);
        sdk.set('access_key', undefined);
        sdk.set('secret_key', undefined);
      },
      'access and secret keys': () => {
        sdk.set('app_key', undefined);
        sdk.set('access_key', stack().keys.access_key);
        sdk.set('secret_key', stack().keys.secret_key);
      },
    };

    for (const [how, use] of Object.entries(credentials)) {
      describe(`with ${how}`, () => {
        before(use);

        it('search and recommendation: results with scores and metadata, reqid from X-Log-ID, the call tracked', async () => {
          for (const method of ['search', 'recommendation'] as const) {
            const answer = await run(sdk, method, { im_name: 'opencv-doc_plant', limit: 3, score: true, fl: ['brand', 'price'] });
            assert.equal(answer.status, 'OK', JSON.stringify(answer));
            // The original service answers a recommendation as a search.
            assert.equal(answer.method, 'search');
            assert.deepEqual(answer.error, []);
            const result = answer.result as { im_name: string; score: number; value_map: Record<string, string> }[];
            assert.equal(result.length, 3);
            assert.ok(result.every((item) => item.im_name !== 'opencv-doc_plant' && item.score > 0 && item.score <= 1));
            assert.ok(result.every((item) => Object.keys(item.value_map).sort().join() === 'brand,price'));
            assert.match(answer.reqid, /^[0-9a-f]{32}$/);
            // The SDK reports the call with the request id it read, once the callback has run.
            const reported = () => tracked.some((event) => event.get('reqid') === answer.reqid && event.get('action') === method);
            for (let tries = 0; tries < 50 && !reported(); tries++) await new Promise((resolve) => setTimeout(resolve, 100));
            assert.ok(reported(), `the call ${answer.reqid} was not tracked`);
          }
        });

        it('uploadsearch by file, then by the im_id it answered, then by im_url', async () => {
          const byFile = await run(sdk, 'uploadsearch', { image: fileInput('opencv-doc_plant.jpg'), limit: 5, score: 'true' });
          assert.equal(byFile.status, 'OK', JSON.stringify(byFile));
          assert.equal(byFile.method, 'uploadsearch');
          const imId = byFile.im_id as string;
          assert.match(imId, /^[0-9a-f]{32}$/);
          assert.equal((byFile.product_types as { type: string }[])[0]?.type, 'Vase and Pot');
          const first = (byFile.result as { im_name: string; score: number }[])[0];
          assert.deepEqual([first?.im_name, first?.score], ['opencv-doc_plant', 1]);

          const byId = await run(sdk, 'uploadsearch', { im_id: imId, limit: 5, score: 'true' });
          assert.equal(byId.status, 'OK', JSON.stringify(byId));
          assert.equal(byId.im_id, imId);
          assert.deepEqual(byId.result, byFile.result);

          const byUrl = await run(sdk, 'uploadsearch', { im_url: `${stack().imagesUrl}/animals_birds_hen.png`, limit: 2 });
          assert.equal(byUrl.status, 'OK', JSON.stringify(byUrl));
          assert.equal((byUrl.result as { im_name: string }[])[0]?.im_name, 'animals_birds_hen');
        });

        it('discoversearch by file and by im_url: each object with its own results', async () => {
          for (const image of [{ image: fileInput('opencv-doc_plant.jpg') }, { im_url: `${stack().imagesUrl}/opencv-doc_plant.jpg` }]) {
            const answer = await run(sdk, 'discoversearch', { ...image, detection_limit: 3, result_limit: 4 });
            assert.equal(answer.status, 'OK', JSON.stringify(answer));
            assert.equal(answer.method, 'discoversearch');
            const objects = answer.objects as { type: string; box: number[]; total: number; result: { im_name: string }[] }[];
            assert.ok(objects.length >= 1);
            assert.equal(objects[0]?.type, 'Vase and Pot');
            assert.ok(objects.every((object) => object.box.length === 4 && object.result.length <= 4 && object.total >= object.result.length));
            assert.ok((answer.object_types_list as unknown[]).length > 0);
          }
        });

        it('colorsearch: images of that colour first', async () => {
          const answer = await run(sdk, 'colorsearch', { color: ['8cc63f:70', 'ffffff:30'], limit: 3, fl: ['category'] });
          assert.equal(answer.status, 'OK', JSON.stringify(answer));
          assert.equal(answer.method, 'colorsearch');
          assert.equal((answer.result as unknown[]).length, 3);
        });

        it('error paths reach the callback with the message: unknown name, bad colour, bad parameter, bad file', async () => {
          const cases: [keyof Omit<Sdk, 'set'>, Record<string, unknown>, string][] = [
            ['search', { im_name: 'no-such-image' }, 'Image not found with im_name.'],
            ['colorsearch', { color: 'red' }, 'Invalid color red: use a 6-digit hex color such as ff0000.'],
            ['search', { im_name: 'opencv-doc_plant', score_min: 2 }, 'score_min must be between 0.0 and 1.0.'],
            ['uploadsearch', { im_id: '0123456789abcdef0123456789abcdef' }, 'Image not found with im_id.'],
            ['uploadsearch', { image: { files: [createReadStream(path.join(IMAGES_DIR, 'manifest.json'))] } }, 'Invalid image file format.'],
            ['discoversearch', { im_url: `${stack().imagesUrl}/no-such-file.jpg` }, 'Could not download the image, please try again later.'],
          ];
          for (const [method, params, message] of cases) {
            const answer = await run(sdk, method, params);
            assert.deepEqual([answer.status, answer.method, answer.error], ['fail', method, [message]], JSON.stringify(answer));
            assert.match(answer.reqid, /^[0-9a-f]{32}$/);
          }
        });
      });
    }

    it('wrong credentials reach the callback as "Invalid access key or secret key."', async () => {
      const wrong = {
        'an unknown app key': () => {
          sdk.set('app_key', 'not-a-key');
          sdk.set('access_key', undefined);
          sdk.set('secret_key', undefined);
        },
        'a wrong secret key': () => {
          sdk.set('app_key', undefined);
          sdk.set('access_key', stack().keys.access_key);
          sdk.set('secret_key', 'wrong');
        },
      };
      for (const [how, use] of Object.entries(wrong)) {
        use();
        for (const method of ['search', 'colorsearch', 'uploadsearch'] as const) {
          const params = { search: { im_name: 'opencv-doc_plant' }, colorsearch: { color: 'ff0000' }, uploadsearch: { im_url: `${stack().imagesUrl}/animals_birds_hen.png` } };
          const answer = await run(sdk, method, params[method]);
          assert.deepEqual([answer.status, answer.error], ['fail', ['Invalid access key or secret key.']], `${how} ${method}`);
        }
      }
    });

    it('an app with no images answers each search "App doesn\'t have any images."', async () => {
      sdk.set('app_key', stack().emptyKeys.app_key);
      sdk.set('access_key', undefined);
      sdk.set('secret_key', undefined);
      const answer = await run(sdk, 'colorsearch', { color: 'ff0000' });
      assert.deepEqual([answer.status, answer.error], ['fail', ["App doesn't have any images."]]);
    });
  });
}
