import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page, Request, Response } from 'playwright-core';
import { adminRequest, type AdminConfig } from '../../scripts/lib/admin-client.ts';
import { insertForm, waitForInsert, type AuthHeader } from '../../scripts/lib/api-client.ts';
import { startLocalStack, type LocalStack } from '../../scripts/lib/local-stack.ts';
import { stackLogOf } from '../support/test-log.ts';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { launchChromium } from '../support/chromium.ts';
import { IMAGES_DIR, startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/**
 * The web console end to end (`npm run test:browser`): the local stack on free ports with fresh state, a few shared
 * images inserted, and the console driven in headless Chromium. Screenshots go to `.local/screenshots/`.
 */

const STATE_DIR = path.join(ROOT, '.wrangler/browser-test-state');
const SCREENSHOTS = path.join(ROOT, '.local/screenshots');
const ADMIN_TOKEN = 'browser-test-admin-token';
/** A 500x333 photo whose pot the detector finds as "Vase and Pot" at 192,199,370,331 (inference/README.md). */
const QUERY = 'opencv-doc_plant.jpg';
/** The catalog, with each image's `room`. */
const CATALOG: Record<string, string> = {
  'opencv-doc_plant.jpg': 'living',
  'opencv-doc_aloeL.jpg': 'living',
  'opencv-doc_building.jpg': 'street',
  'household_dishes_pitcher_small.png': 'kitchen',
  'skimage_chelsea.jpg': 'living',
  'animals_birds_hen.png': 'garden',
};

type Keys = { app_id: string; access_key: string; secret_key: string; app_key: string };

let stack: LocalStack;
let images: Server;
let imagesUrl: string;
let browser: Browser;
/** One browser profile for every page: the keys pasted on one are in localStorage for the next. */
let context: BrowserContext;
let keys: Keys;
/** What the pages did wrong: script errors, console errors, failed calls and requests to anywhere but the service. */
const problems: string[] = [];
/** The failed calls a test makes on purpose. */
const expectedFailures: ((response: Response) => boolean)[] = [];

before(
  async () => {
    rmSync(STATE_DIR, { recursive: true, force: true });
    mkdirSync(SCREENSHOTS, { recursive: true });
    const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
    // One at a time, so that after() can stop whatever started when a later step fails.
    images = await startFixtureServer(imagesPort);
    imagesUrl = `http://127.0.0.1:${imagesPort}/images`;
    stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR, log: stackLogOf('browser') });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });

    const admin: AdminConfig = { baseUrl: stack.baseUrl, token: ADMIN_TOKEN };
    const created = await adminRequest<Keys>(admin, 'POST', '/admin/apps', { name: 'console' });
    assert.equal(created.status, 201);
    keys = created.body;
    const fields = [{ name: 'room', type: 'string', searchable: true }];
    assert.equal((await adminRequest(admin, 'PUT', `/admin/apps/${keys.app_id}/schema`, { fields })).status, 200);

    const auth: AuthHeader = { authorization: `Basic ${btoa(`${keys.access_key}:${keys.secret_key}`)}` };
    const catalog = Object.entries(CATALOG).map(([file, room]) => ({
      name: imageNameOf(file),
      url: `${imagesUrl}/${file}`,
      metadata: { room },
    }));
    const body = insertForm(catalog);
    const inserted = await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body });
    const answer = (await inserted.json()) as { status: string; trans_id: number };
    assert.equal(answer.status, 'OK');
    const status = await waitForInsert(stack.baseUrl, auth, answer.trans_id, { pollMs: 300, timeoutMs: 90_000 });
    assert.equal(status.success_count, catalog.length, JSON.stringify(status.error_list));
  },
  { timeout: 180_000 },
);

after(async () => {
  await browser?.close();
  images?.closeAllConnections();
  images?.close();
  stack?.stop();
});

/** A new page on the console, watched for script errors, console errors, failed calls and requests elsewhere. */
async function openConsole(): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every answer of 400 or more: those are judged on the response, below.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  page.on('response', (response) => {
    if (response.status() >= 400 && !expectedFailures.some((expected) => expected(response))) {
      problems.push(`${response.status()} from ${response.request().method()} ${response.url()}`);
    }
  });
  page.on('request', (request) => {
    const url = request.url();
    // A query image given by URL is shown from that URL: the one request the console makes elsewhere.
    const queryImage = url.startsWith(`${imagesUrl}/`) && request.resourceType() === 'image';
    const local = url.startsWith(`${stack.baseUrl}/`) || /^(blob|data):/.test(url);
    if (!local && !queryImage) problems.push(`request to ${url}`);
  });
  const response = await page.goto(`${stack.baseUrl}/console/`);
  assert.equal(response?.status(), 200);
  assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
  return page;
}

async function pasteKeys(page: Page, pasted: { access?: string; secret?: string; app?: string }): Promise<void> {
  await page.getByLabel('Access key').fill(pasted.access ?? '');
  await page.getByLabel('Secret key').fill(pasted.secret ?? '');
  await page.getByLabel('App key').fill(pasted.app ?? '');
  await page.getByRole('button', { name: 'Use keys' }).click();
}

type Shown = { reqid: string; results: { name: string; score: string }[] };

/** The results shown once an answer with another request id than `previous` has come, without errors. */
async function resultsAfter(page: Page, previous: string | null): Promise<Shown> {
  await page.waitForFunction((old) => {
    const match = /reqid (\w+)/.exec(document.querySelector('#summary')?.textContent ?? '');
    return (match && match[1] !== old) || document.querySelector('#errors .error');
  }, previous);
  assert.deepEqual(await page.locator('#errors .error').allTextContents(), []);
  const reqid = /reqid (\w+)/.exec((await page.locator('#summary').textContent()) ?? '')![1]!;
  const results = await page.locator('.result').evaluateAll((cards) =>
    cards.map((card) => ({
      name: card.querySelector('.name')!.textContent!,
      score: card.querySelector('.score')?.textContent ?? '',
    })),
  );
  return { reqid, results };
}

/** Every thumbnail shown came through `GET /image` as an object URL and decoded. */
async function thumbnailsLoaded(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLImageElement>('.result .thumb img')].every(
      (img) => img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0,
    ),
  );
}

/** The `box` an `/uploadsearch` call sent, from its multipart body. */
function sentBox(request: Request): number[] {
  const match = /name="box"\r\n\r\n([\d,]+)\r\n/.exec(request.postData() ?? '');
  assert.ok(match, 'the call sent a box');
  return match[1]!.split(',').map(Number);
}

const uploadSearch = (page: Page): Promise<Request> =>
  page.waitForRequest((request) => request.url().endsWith('/uploadsearch'));

test('GET / leads to the console, whose header links the API reference', async () => {
  const home = await fetch(`${stack.baseUrl}/`, { redirect: 'manual' });
  assert.equal(home.status, 302);
  assert.equal(new URL(home.headers.get('location')!, stack.baseUrl).pathname, '/console/');
  const page = await openConsole();
  await page.getByRole('link', { name: 'API reference' }).click();
  await page.waitForURL(`${stack.baseUrl}/docs`);
  assert.ok(await page.getByRole('heading').first().isVisible());
  await page.close();
});

test('keys, an uploaded photo, its detected boxes, a click on one, a drawn area: results with scores', async () => {
  const page = await openConsole();
  await pasteKeys(page, { access: keys.access_key, secret: keys.secret_key });
  await page.getByText('Using the access key and secret key: search and insert.').waitFor();

  await page.locator('#image-form input[type=file]').setInputFiles(path.join(IMAGES_DIR, QUERY));
  const box = page.locator('.box', { hasText: 'Vase and Pot' }).first();
  await box.waitFor();
  const first = await resultsAfter(page, null);
  assert.equal(first.results[0]?.name, imageNameOf(QUERY));
  // The object searched (the primary one) is marked and named; boxes were drawn, so the caption says to click one.
  await page.getByText('Click a box to search that object, or drag on the image to search an area.').waitFor();
  const primary = (await page.locator('.box.selected').textContent())!;
  assert.equal(await page.locator('.searched').textContent(), `Searched: ${primary.replace(/ (\d\.\d\d)$/, ', $1')}`);
  assert.match((await page.locator('#summary small.reqid').textContent())!, /^reqid \w+$/);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-upload.png'), fullPage: true });

  // A click names the object by a point inside its box: the pot, searched against the catalog's pots.
  const [clickCall] = await Promise.all([uploadSearch(page), box.click()]);
  const [x1, y1, x2, y2] = sentBox(clickCall);
  assert.ok(x1 === x2 && y1 === y2 && x1! > 192 && x1! < 370 && y1! > 199 && y1! < 331, `point ${x1},${y1}`);
  const clicked = await resultsAfter(page, first.reqid);
  await page.locator('.box.selected').waitFor();
  assert.equal(clicked.results[0]?.name, imageNameOf(QUERY));
  assert.match((await page.locator('.searched').textContent())!, /^Searched: Vase and Pot, [01]\.\d\d$/);
  assert.match(clicked.results[0]!.score, /^score (0\.9\d\d|1\.000)$/);
  for (const result of clicked.results) assert.match(result.score, /^score [01]\.\d{3}$/);
  // get_all_fl is on: each result shows its metadata.
  assert.equal(await page.locator('.result').first().locator('dd').textContent(), 'living');
  await thumbnailsLoaded(page);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-box.png'), fullPage: true });

  // Dragging from 10,10 to the middle of the bottom edge searches that area, in the photo's own pixels.
  const image = (await page.locator('#query-image').boundingBox())!;
  const scale = 500 / image.width;
  await page.mouse.move(image.x + 10, image.y + 10);
  await page.mouse.down();
  const [dragCall] = await Promise.all([
    uploadSearch(page),
    (async () => {
      await page.mouse.move(image.x + image.width / 2, image.y + image.height - 10, { steps: 5 });
      await page.mouse.up();
    })(),
  ]);
  const expected = [10 * scale, 10 * scale, 250, 333 - 10 * scale];
  sentBox(dragCall).forEach((value, i) => assert.ok(Math.abs(value - expected[i]!) <= 2, `box ${sentBox(dragCall)}`));
  await page.locator('.area').waitFor();
  const drawn = await resultsAfter(page, clicked.reqid);
  assert.ok(drawn.results.length > 0);
  assert.match((await page.locator('.searched').textContent())!, /^Searched: (the area drawn|.+, [01]\.\d\d)$/);
  await page.close();
});

test('the insert page sends rows and shows the transaction to its end, failures listed', async () => {
  const page = await openConsole();
  // The keys pasted on the first page were kept in localStorage.
  await page.getByText('Using the access key and secret key: search and insert.').waitFor();
  await page.getByRole('link', { name: 'Insert' }).click();
  // A metadata field a schema field: the schema has `room`.
  const row = page.locator('#insert-rows li');
  await row.nth(0).getByLabel('im_name').fill('pitcher-again');
  await row.nth(0).getByLabel('im_url').fill(`${imagesUrl}/household_dishes_pitcher_small.png`);
  await row.nth(0).getByLabel('room').fill('kitchen');
  assert.equal(await row.nth(0).locator('label', { hasText: 'room' }).locator('small').textContent(), 'string');
  await page.getByRole('button', { name: 'Add row' }).click();
  await row.nth(1).getByLabel('im_name').fill('missing');
  await row.nth(1).getByLabel('im_url').fill(`${imagesUrl}/no-such-image.jpg`);
  await page.getByRole('button', { name: 'Insert', exact: true }).click();

  await page.getByText('100% done · 1 succeeded · 1 failed of 2').waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('#insert-progress').evaluate((bar: HTMLProgressElement) => bar.value), 100);
  const failures = await page.locator('#insert-failures li').allTextContents();
  assert.deepEqual(failures, ['missing: Could not download the image from im_url. (201)']);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-insert.png'), fullPage: true });
  await page.close();
});

test('an image under 100 px on both sides fails with 203, and the console says the minimum', async () => {
  const page = await openConsole();
  await page.getByRole('link', { name: 'Insert' }).click();
  const row = page.locator('#insert-rows li').nth(0);
  await row.getByLabel('im_name').fill('tiny-apple');
  await row.getByLabel('im_url').fill(`${imagesUrl}/food_fruit_apple_fuji.png`);
  await page.getByRole('button', { name: 'Insert', exact: true }).click();
  await page.getByText('100% done · 0 succeeded · 1 failed of 1').waitFor({ timeout: 60_000 });
  const failures = await page.locator('#insert-failures li').allTextContents();
  assert.deepEqual(failures, ['tiny-apple: Unsupported image dimension. (at least 100 px on one side) (203)']);
  await page.close();
});

test('a file from the computer is inserted (multipart) and becomes searchable', async () => {
  const page = await openConsole();
  await page.getByRole('link', { name: 'Insert' }).click();
  const row = page.locator('#insert-rows li').nth(0);
  await row.getByLabel('im_name').fill('fruits-file');
  await row.getByLabel('or a file').setInputFiles(path.join(IMAGES_DIR, 'opencv-doc_fruits.jpg'));
  const [sent] = await Promise.all([
    page.waitForRequest((request) => new URL(request.url()).pathname === '/insert'),
    page.getByRole('button', { name: 'Insert', exact: true }).click(),
  ]);
  assert.match(sent.headers()['content-type'] ?? '', /^multipart\/form-data/);
  await page.getByText('100% done · 1 succeeded · 0 failed of 1').waitFor({ timeout: 60_000 });

  await page.getByRole('link', { name: 'Search' }).click();
  await page.getByRole('tab', { name: 'By name' }).click();
  await page.locator('#name-form').getByLabel('im_name').fill('fruits-file');
  await page.locator('#name-form').getByRole('button', { name: 'Search' }).click();
  const similar = await resultsAfter(page, null);
  assert.ok(similar.results.length > 0);
  // Taken out again: the later pages count the shared catalog.
  const auth = { authorization: `Basic ${btoa(`${keys.access_key}:${keys.secret_key}`)}` };
  const removed = await fetch(`${stack.baseUrl}/remove`, { method: 'POST', headers: auth, body: new URLSearchParams({ 'im_name[0]': 'fruits-file' }) });
  assert.equal(((await removed.json()) as { status: string }).status, 'OK');
  await page.close();
});

test('an app key alone searches (a dropped photo, an image URL, a colour, a text) but is told it cannot insert', async () => {
  const page = await openConsole();
  await pasteKeys(page, { app: keys.app_key });
  await page.getByText('Using the app key: search only.').waitFor();

  const bytes = readFileSync(path.join(IMAGES_DIR, 'opencv-doc_aloeL.jpg')).toString('base64');
  const dataTransfer = await page.evaluateHandle((base64) => {
    const transfer = new DataTransfer();
    const data = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
    transfer.items.add(new File([data], 'aloe.jpg', { type: 'image/jpeg' }));
    return transfer;
  }, bytes);
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer });
  await page.locator('.box', { hasText: 'Vase and Pot' }).first().waitFor();
  const dropped = await resultsAfter(page, null);
  assert.equal(dropped.results[0]?.name, 'opencv-doc_aloeL');
  await thumbnailsLoaded(page);

  await page.getByLabel('or an image URL').fill(`${imagesUrl}/${QUERY}`);
  await page.locator('#image-form').getByRole('button', { name: 'Search' }).click();
  const byUrl = await resultsAfter(page, dropped.reqid);
  assert.equal(byUrl.results[0]?.name, imageNameOf(QUERY));
  await page.locator('.box', { hasText: 'Vase and Pot' }).first().waitFor();
  assert.equal(await page.locator('#query-image').evaluate((img: HTMLImageElement) => img.naturalWidth), 500);

  // Each tab keeps its own results: the colour tab has none until it searches, the image tab's come back.
  await page.getByRole('tab', { name: 'By colour' }).click();
  assert.equal(await page.locator('.result').count(), 0);
  assert.equal(await page.locator('#summary').textContent(), '');
  await page.locator('#color-form').getByRole('button', { name: 'Search' }).click();
  const colored = await resultsAfter(page, byUrl.reqid);
  assert.ok(colored.results.length >= Object.keys(CATALOG).length);
  await thumbnailsLoaded(page);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-app-key.png'), fullPage: true });
  await page.getByRole('tab', { name: 'By image' }).click();
  assert.match((await page.locator('#summary').textContent())!, new RegExp(`reqid ${byUrl.reqid}$`));
  assert.equal(await page.locator('.result .name').first().textContent(), imageNameOf(QUERY));

  // An image URL that answers nothing: the page says the image could not be shown, and the search's error.
  const missing = `${imagesUrl}/no-such-image.jpg`;
  expectedFailures.push((response) => response.url() === missing);
  await page.getByLabel('or an image URL').fill(missing);
  await page.locator('#image-form').getByRole('button', { name: 'Search' }).click();
  await page.getByText('The image could not be shown here').waitFor();
  await page.locator('#errors .error').waitFor();
  assert.equal(await page.locator('.box').count(), 0);

  // The text box calls /textsearch; the local stack's model reads no text, which the envelope says.
  await page.getByRole('tab', { name: 'By text' }).click();
  const [textCall] = await Promise.all([
    page.waitForRequest((request) => new URL(request.url()).pathname === '/textsearch'),
    (async () => {
      await page.locator('#text-form').getByLabel('Text').fill('red pot');
      await page.locator('#text-form').getByRole('button', { name: 'Search' }).click();
    })(),
  ]);
  assert.equal(new URL(textCall.url()).searchParams.get('q'), 'red pot');
  await page.locator('#errors .error').waitFor();
  assert.match((await page.locator('#errors .error').textContent()) ?? '', /embedding model cannot read text/);

  await page.getByRole('link', { name: 'Insert' }).click();
  await page.getByText('An app key can only search.').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Insert', exact: true }).isDisabled(), true);
  await page.close();
});

test("the advanced form: facets, groups, a facet value as a filter, the envelope's errors; Similar", async () => {
  const page = await openConsole();
  await pasteKeys(page, { access: keys.access_key, secret: keys.secret_key });
  await page.getByRole('tab', { name: 'By name' }).click();
  await page.locator('#name-form').getByLabel('im_name').fill(imageNameOf(QUERY));
  await page.locator('#name-form').getByRole('button', { name: 'Search' }).click();
  const similar = await resultsAfter(page, null);
  assert.ok(similar.results.length > 0);
  assert.ok(similar.results.every((result) => result.name !== imageNameOf(QUERY)));

  await page.locator('details.advanced summary').click();
  const advanced = page.locator('#advanced');
  // Plain labels, the API's names in small print.
  assert.equal(await advanced.getByLabel('Duplicate gap').getAttribute('name'), 'dedup_score_threshold');
  assert.equal(await advanced.locator('label', { hasText: 'Duplicate gap' }).locator('small').textContent(), 'dedup_score_threshold');
  assert.match((await advanced.locator('label', { hasText: 'Filter' }).locator('small').textContent())!, /^fq /);
  await advanced.locator('[name=facets]').fill('room');
  await advanced.locator('[name=facets_show_count]').check();
  await advanced.locator('[name=group_by]').fill('room');
  await advanced.getByRole('button', { name: 'Search again' }).click();
  const grouped = await resultsAfter(page, similar.reqid);
  // The catalog less the query image, and the pitcher the insert page added.
  const facetValues = await page.locator('.facet-value').allTextContents();
  assert.deepEqual(facetValues, ['kitchen (2)', 'living (2)', 'garden (1)', 'street (1)']);
  const groups = (await page.locator('.group h2').allTextContents()).sort();
  assert.deepEqual(groups, ['room: garden', 'room: kitchen', 'room: living', 'room: street']);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-advanced.png'), fullPage: true });

  await page.locator('.facet-value', { hasText: 'kitchen' }).click();
  const filtered = await resultsAfter(page, grouped.reqid);
  assert.equal(await advanced.locator('[name=fq]').inputValue(), 'room:"kitchen"');
  assert.deepEqual(await page.locator('.group h2').allTextContents(), ['room: kitchen']);

  const sortByRoom = (response: Response): boolean => new URL(response.url()).searchParams.get('sort_by') === 'room';
  await advanced.locator('[name=sort_by]').fill('room');
  // A failed search is HTTP 200 like any envelope: the console shows its errors all the same.
  const [refused] = await Promise.all([page.waitForResponse(sortByRoom), advanced.getByRole('button', { name: 'Search again' }).click()]);
  assert.equal(refused.status(), 200);
  assert.equal(((await refused.json()) as { status: string }).status, 'fail');
  await page.locator('#errors .error').waitFor();
  const errors = await page.locator('#errors .error').allTextContents();
  assert.deepEqual(errors, ['sort_by must be <field>:asc or <field>:desc.']);

  for (const field of ['sort_by', 'fq', 'group_by']) await advanced.locator(`[name=${field}]`).fill('');
  await advanced.getByRole('button', { name: 'Search again' }).click();
  const again = await resultsAfter(page, filtered.reqid);
  await page.locator('.result', { hasText: 'opencv-doc_aloeL' }).getByRole('button', { name: 'Similar' }).click();
  const aloe = await resultsAfter(page, again.reqid);
  assert.equal(await page.locator('#name-form').getByLabel('im_name').inputValue(), 'opencv-doc_aloeL');
  assert.ok(aloe.results.every((result) => result.name !== 'opencv-doc_aloeL'));
  await page.close();
});

test('the catalog page: count, thumbnails, paging, a remove, and the schema, which the admin token changes', async () => {
  const page = await openConsole();
  await page.getByRole('link', { name: 'Catalog' }).click();
  // The shared images and the pitcher the insert page added; the tiny apple failed.
  const count = page.locator('#catalog-count');
  await page.getByText(`${Object.keys(CATALOG).length + 1} images · page 1 of 1`).waitFor();
  await thumbnailsLoaded(page);
  const names = await page.locator('#catalog-grid .result .name').allTextContents();
  assert.deepEqual([...names].sort(), [...Object.keys(CATALOG).map(imageNameOf), 'pitcher-again'].sort());
  assert.equal(await page.locator('#catalog-grid .result', { hasText: 'pitcher-again' }).locator('dd').textContent(), 'kitchen');
  const schema = await page.locator('#schema-table tbody tr').evaluateAll((rows) =>
    rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)),
  );
  assert.deepEqual(schema, [['room', 'string', 'yes']]);
  // The application has not set its own product types: the page says it has the service's defaults.
  assert.equal(await page.locator('#product-types-default').isVisible(), true);
  assert.equal(await page.locator('#product-types-table').isVisible(), false);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'console-catalog.png'), fullPage: true });

  // A removal takes a second click to confirm.
  await page.getByRole('button', { name: 'Remove pitcher-again', exact: true }).click();
  await page.getByRole('button', { name: 'Remove pitcher-again for good' }).click();
  await page.getByText(`${Object.keys(CATALOG).length} images · page 1 of 1`).waitFor();
  assert.equal(await page.locator('#catalog-grid .result', { hasText: 'pitcher-again' }).count(), 0);

  await page.getByLabel('Images a page').fill('4');
  await page.getByLabel('Images a page').blur();
  await page.getByText(`${Object.keys(CATALOG).length} images · page 1 of 2`).waitFor();
  assert.equal(await page.locator('#catalog-grid .result').count(), 4);
  await page.locator('#catalog-pager').getByRole('button', { name: 'Next page' }).click();
  await page.getByText(`${Object.keys(CATALOG).length} images · page 2 of 2`).waitFor();
  assert.equal(await page.locator('#catalog-grid .result').count(), Object.keys(CATALOG).length - 4);
  assert.equal(await page.locator('#catalog-pager').getByRole('button', { name: 'Next page' }).isDisabled(), true);
  assert.match((await count.textContent())!, /page 2 of 2$/);

  // The schema: saving needs the admin token, kept for the tab.
  await page.getByText('Change the schema').click();
  await page.getByRole('button', { name: 'Add field' }).click();
  const added = page.locator('#schema-rows li').last();
  await added.getByLabel('Field name').fill('price');
  await added.getByLabel('Type').selectOption('float');
  await page.getByRole('button', { name: 'Save schema' }).click();
  await page.getByText('Changing the schema needs the admin token.').waitFor();
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Save schema' }).click();
  await page.getByText('Saved: 2 fields.').waitFor();
  const saved = await adminRequest<{ schema: { fields: unknown[] } }>({ baseUrl: stack.baseUrl, token: ADMIN_TOKEN }, 'GET', `/admin/apps/${keys.app_id}`);
  assert.deepEqual(saved.body.schema.fields, [
    { name: 'price', type: 'float', searchable: true },
    { name: 'room', type: 'string', searchable: true },
  ]);
  const shown = await page.locator('#schema-table tbody tr').allTextContents();
  assert.deepEqual(shown.sort(), ['pricefloatyes', 'roomstringyes']);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('image-search-console:admin-token')), ADMIN_TOKEN);
  await page.close();
});

/** Whether the page is no wider than its viewport, and how many lines the drop zone's text takes. */
async function layout(page: Page): Promise<{ scrollWidth: number; dropLines: number }> {
  return page.evaluate(() => {
    const text = document.querySelector('#drop-zone span')!;
    const lineHeight = parseFloat(getComputedStyle(text).lineHeight);
    const dropLines = text.getClientRects().length ? Math.round(text.getBoundingClientRect().height / lineHeight) : 0;
    return { scrollWidth: document.documentElement.scrollWidth, dropLines };
  });
}

test('at phone width (390x844) nothing scrolls sideways and the drop zone reads in lines; screenshots at desktop too', async () => {
  const page = await openConsole();
  await page.locator('#image-form input[type=file]').setInputFiles(path.join(IMAGES_DIR, QUERY));
  await resultsAfter(page, null);
  await page.locator('details.advanced summary').click();
  for (const [width, height, device] of [[390, 844, 'phone'], [1280, 800, 'desktop']] as const) {
    await page.setViewportSize({ width, height });
    for (const view of ['search', 'insert', 'catalog']) {
      await page.getByRole('link', { name: view[0]!.toUpperCase() + view.slice(1), exact: true }).click();
      await page.screenshot({ path: path.join(SCREENSHOTS, `console-${device}-${view}.png`), fullPage: true });
      const { scrollWidth, dropLines } = await layout(page);
      assert.ok(scrollWidth <= width, `${device} ${view}: ${scrollWidth} px wide`);
      if (view === 'search') assert.ok(dropLines >= 1 && dropLines <= 2, `${device}: the drop zone's text takes ${dropLines} lines`);
    }
  }
  await page.close();
});

test('no page had a script error, a console error, an unexpected failed call or a request outside the service', () => {
  assert.deepEqual(problems, []);
});
