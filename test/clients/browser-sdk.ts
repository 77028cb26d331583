import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { launchChromium } from '../support/chromium.ts';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import type { ClientStack } from './stack.ts';

/**
 * The official JavaScript SDK 1.5.2 in a web page, as a shop's site uses it: bundled for the browser from the npm
 * package, loaded by a page of another origin than the API, with the application's app key. Every call it makes
 * carries `X-Requested-With` and `Accept`, so each is a preflighted cross-origin request; the SDK reads the request id
 * from `X-Log-ID` and reports an `OK` call to its tracking endpoint (here the page's own server) with an image.
 */

type Answer = { status: string; method: string; error: unknown[]; reqid: string; result?: { im_name: string; score?: number }[]; [field: string]: unknown };

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Shop</title></head>
<body><input type="file" id="photo" accept="image/*"><script src="/visearch.js"></script></body></html>`;

/** The SDK for the browser, as a site's bundler makes it: its package's browser fields (window.fetch, FormData). */
async function bundleSdk(): Promise<string> {
  const result = await build({
    stdin: { contents: "window.visearch = require('visearch-javascript-sdk');", resolveDir: ROOT, sourcefile: 'shop.js' },
    bundle: true,
    platform: 'browser',
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

export function browserSdkSuite(stack: () => ClientStack): void {
  describe('the JavaScript SDK 1.5.2 in a page of another origin, in headless Chromium', () => {
    let site: http.Server;
    let siteUrl: string;
    let browser: Browser;
    let page: Page;
    const tracked: URLSearchParams[] = [];
    const problems: string[] = [];

    before(async () => {
      const script = await bundleSdk();
      site = http.createServer((request, response) => {
        const url = new URL(request.url ?? '/', 'http://site');
        if (url.pathname === '/visearch.js') return void response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
        if (url.pathname === '/__aq.gif') {
          tracked.push(url.searchParams);
          return void response.writeHead(204).end();
        }
        response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      });
      const port = await freePort();
      await new Promise<void>((resolve) => site.listen(port, '127.0.0.1', resolve));
      // The API is on 127.0.0.1, the page on localhost: another origin (and another port).
      siteUrl = `http://localhost:${port}`;
      browser = await launchChromium();
      page = await browser.newPage();
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      });
      page.on('requestfailed', (request) => problems.push(`failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`));
      await page.goto(`${siteUrl}/`);
      await page.evaluate(
        ({ endpoint, appKey, tracker }) => {
          const sdk = (window as unknown as { visearch: { set(name: string, value: unknown): void } }).visearch;
          sdk.set('endpoint', endpoint);
          sdk.set('app_key', appKey);
          sdk.set('track_end_point', tracker);
          sdk.set('timeout', 120_000);
        },
        { endpoint: `${stack().baseUrl}/`, appKey: stack().keys.app_key, tracker: `${siteUrl}/` },
      );
    });
    after(async () => {
      await browser?.close();
      site?.closeAllConnections();
      site?.close();
    });

    /** Runs an SDK call in the page; its callback's answer, or its failure callback's error. */
    const run = (method: string, params: Record<string, unknown>, withPhoto = false): Promise<Answer> =>
      page.evaluate(
        ({ method, params, withPhoto }) =>
          new Promise<Answer>((resolve, reject) => {
            const sdk = (window as unknown as { visearch: Record<string, (...args: unknown[]) => void> }).visearch;
            const image = withPhoto ? { image: document.getElementById('photo') } : {};
            sdk[method]!({ ...params, ...image }, {}, resolve, (error: unknown) => reject(new Error(String(error))));
          }),
        { method, params, withPhoto },
      );

    it('search: results, the reqid read from X-Log-ID across origins, the call tracked', async () => {
      const answer = await run('search', { im_name: 'opencv-doc_plant', limit: 3, score: true, fl: ['brand'] });
      assert.equal(answer.status, 'OK', JSON.stringify(answer));
      assert.equal(answer.result?.length, 3);
      assert.match(answer.reqid, /^[0-9a-f]{32}$/);
      await page.waitForFunction(() => document.querySelectorAll('img').length > 0);
      for (let tries = 0; tries < 50 && !tracked.some((event) => event.get('reqid') === answer.reqid); tries++) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(tracked.some((event) => event.get('reqid') === answer.reqid && event.get('action') === 'search'));
    });

    it('uploadsearch from a file input', async () => {
      await page.setInputFiles('#photo', path.join(IMAGES_DIR, 'opencv-doc_plant.jpg'));
      const answer = await run('uploadsearch', { limit: 3, score: true }, true);
      assert.equal(answer.status, 'OK', JSON.stringify(answer));
      assert.deepEqual(answer.result?.[0], { im_name: 'opencv-doc_plant', score: 1 });
      assert.equal((answer.product_types as { type: string }[])[0]?.type, 'Vase and Pot');
    });

    it('colorsearch, and a failure the page can read', async () => {
      const answer = await run('colorsearch', { color: ['8cc63f'], limit: 4 });
      assert.equal(answer.status, 'OK', JSON.stringify(answer));
      assert.equal(answer.result?.length, 4);
      const failed = await run('colorsearch', { color: 'green' });
      assert.deepEqual([failed.status, failed.error], ['fail', ['Invalid color green: use a 6-digit hex color such as ff0000.']]);
      assert.deepEqual(problems, []);
    });
  });
}
