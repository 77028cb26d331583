import { readdir, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { seededRandom } from '../inference/src/random.ts';
import { IMAGES_DIR as IMAGES_DIR_DEFAULT } from '../test/fixtures/images.ts';
import { freePort } from '../test/support/free-port.ts';
import { createApplication, imageNameOf, INSERT_BATCH, insertForm, waitForInsert, type AuthHeader } from './lib/api-client.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { loadDetectionTruth, FIXTURES_DIR, overall, precisionRecall, scoreImage, type Detected, type TypeCounts } from './lib/detection-truth.ts';
import { flattenedOriginal, TRANSFORMS } from './lib/near-duplicates.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run eval [-- --images <folder>] [--detection-only]`: search quality through the real service (the local stack,
 * as `npm start` runs it). Inserts every valid image of the folder by URL, then (a) searches near-duplicate copies of
 * each with /uploadsearch and looks for the original (R@1, R@5, mAP), (b) searches each object cut-out with /search
 * and counts the other cut-outs of its category among the first five (manifest.json's `kind` and `category`), and
 * (c) sends each photo of the hand-drawn detection ground truth to /discoversearch at both sensitivities and counts
 * precision and recall per type at IoU 0.5 (scripts/lib/detection-truth.ts). `--detection-only` runs (c) alone.
 */

const { values: args } = parseArgs({
  options: { images: { type: 'string', default: IMAGES_DIR_DEFAULT }, 'detection-only': { type: 'boolean', default: false } },
});
const IMAGES_DIR = path.resolve(args.images);
const STATE_DIR = path.join(ROOT, '.wrangler/eval-state');
const REPORT_FILE = path.join(ROOT, '.local/eval.json');
const ADMIN_TOKEN = 'eval-admin-token';
/** Seeds the copies: a given folder always gives the same queries. */
const SEED = 20240601;
/** Deep enough that a miss is a real miss on a collection of about a hundred images. */
const SEARCH_LIMIT = 100;
/** Any value that names no detectable type turns detection off: the whole upload is searched (README "Detection"). */
const DETECTION_OFF = 'none';
/** The spec calls an image with both sides under 100 px invalid. */
const MIN_SIDE = 100;
/** Two searches in flight keep both cores busy (the Worker, the inference service) on this machine. */
const CONCURRENCY = 2;
const IMAGE_EXTENSIONS = /\.(jpe?g|jpe|png|gif|bmp|dib|webp|pbm|pgm|ppm|sr|ras|tiff?)$/i;

type Entry = { file: string; name: string; kind?: string; category?: string };
type Ranked = { result?: { im_name: string }[] };

let stack: LocalStack | undefined;
let imageServer: http.Server | undefined;
function stopAll(code: number): never {
  stack?.stop();
  imageServer?.close();
  process.exit(code);
}
process.on('SIGINT', () => stopAll(130));
process.on('SIGTERM', () => stopAll(143));

async function main(): Promise<void> {
  const started = performance.now();
  const { valid, skipped } = await listImages();
  console.log(`${valid.length} images in ${IMAGES_DIR}; ${skipped.length} skipped as invalid (under ${MIN_SIDE} px on both sides): ${skipped.join(', ') || 'none'}`);

  await rm(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  imageServer = await serveFolder(imagesPort);
  // Request logs at info level would bury the report.
  process.env.WRANGLER_LOG ??= 'warn';
  stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR, onExit: (code) => stopAll(code ?? 1) });
  const api = new Api(stack.baseUrl, await createApplication({ baseUrl: stack.baseUrl, token: ADMIN_TOKEN }, 'eval'));

  const insertStarted = performance.now();
  const failed = await insertAll(api, valid, `http://127.0.0.1:${imagesPort}`);
  const inserted = valid.filter((entry) => !failed.has(entry.name));
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  console.log(`inserted ${inserted.length} images in ${insertSeconds.toFixed(0)} s${failed.size ? `; failed: ${[...failed].join(', ')}` : ''}`);

  const searchStarted = performance.now();
  const retrieval = args['detection-only'] ? undefined : { nearDuplicates: await evaluateNearDuplicates(api, inserted), categories: await evaluateCategories(api, inserted) };
  const detection = await evaluateDetection(api);
  const searchSeconds = (performance.now() - searchStarted) / 1000;

  if (retrieval) printTable(retrieval.nearDuplicates, retrieval.categories);
  printDetectionTable(detection);
  const report = {
    images: { folder: IMAGES_DIR, inserted: inserted.length, skipped, failed: [...failed] },
    settings: { endpoint: '/uploadsearch', upload: 'image bytes', detection: DETECTION_OFF, limit: SEARCH_LIMIT, seed: SEED },
    transforms: TRANSFORMS.map(({ name, description, draws }) => ({ name, description, draws })),
    ...retrieval,
    detection,
    seconds: { insert: insertSeconds, search: searchSeconds, total: (performance.now() - started) / 1000 },
  };
  await mkdir(path.dirname(REPORT_FILE), { recursive: true });
  await writeFile(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${report.images.inserted} images; ${searchSeconds.toFixed(0)} s of searches, ${report.seconds.total.toFixed(0)} s in all. JSON: ${REPORT_FILE}`);
}

/** The folder's images, with kind and category from its manifest.json where it has one. */
async function listImages(): Promise<{ valid: Entry[]; skipped: string[] }> {
  const files = (await readdir(IMAGES_DIR)).filter((file) => IMAGE_EXTENSIONS.test(file)).sort();
  const manifest = await readFile(path.join(IMAGES_DIR, 'manifest.json'), 'utf8').then(
    (text) => new Map((JSON.parse(text) as Entry[]).map((entry) => [entry.file, entry])),
    () => new Map<string, Entry>(),
  );
  const valid: Entry[] = [];
  const skipped: string[] = [];
  for (const file of files) {
    const { width = 0, height = 0 } = await sharp(path.join(IMAGES_DIR, file)).metadata();
    if (width < MIN_SIDE && height < MIN_SIDE) {
      skipped.push(file);
      continue;
    }
    valid.push({ ...manifest.get(file), file, name: imageNameOf(file) });
  }
  return { valid, skipped };
}

/** The folder's files over HTTP, so that /insert can download them by im_url. */
function serveFolder(port: number): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const file = path.basename(decodeURIComponent((request.url ?? '/').split('?')[0]!));
    readFile(path.join(IMAGES_DIR, file)).then(
      (body) => response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.byteLength }).end(body),
      () => response.writeHead(404).end(),
    );
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

class Api {
  readonly baseUrl: string;
  readonly auth: AuthHeader;
  constructor(baseUrl: string, auth: AuthHeader) {
    this.baseUrl = baseUrl;
    this.auth = auth;
  }

  async call<T>(pathAndQuery: string, body?: FormData | URLSearchParams): Promise<T> {
    const response = await fetch(new URL(pathAndQuery, this.baseUrl), {
      method: body ? 'POST' : 'GET',
      headers: this.auth,
      ...(body ? { body } : {}),
    });
    const json = (await response.json()) as T;
    if (!response.ok) throw new Error(`${pathAndQuery}: HTTP ${response.status} ${JSON.stringify(json)}`);
    return json;
  }
}

/** Inserts in batches of the spec's 100 and waits until every transaction is at 100 %; the names that failed. */
async function insertAll(api: Api, entries: Entry[], imagesUrl: string): Promise<Set<string>> {
  const transactions: number[] = [];
  for (let start = 0; start < entries.length; start += INSERT_BATCH) {
    const images = entries.slice(start, start + INSERT_BATCH).map((entry) => ({ name: entry.name, url: `${imagesUrl}/${encodeURIComponent(entry.file)}` }));
    transactions.push((await api.call<{ trans_id: number }>('/insert', insertForm(images))).trans_id);
  }
  const failed = new Set<string>();
  for (const transId of transactions) {
    const status = await waitForInsert(api.baseUrl, api.auth, transId, { pollMs: 1000, timeoutMs: 3_600_000 });
    for (const error of status.error_list) failed.add(error.im_name);
  }
  return failed;
}

type RetrievalScores = { queries: number; r1: number; r5: number; map: number };
type Miss = { im_name: string; kind: string | undefined; transform: string; rank: number | null };
type NearDuplicateReport = { byTransform: Record<string, RetrievalScores>; overall: RetrievalScores; misses: Miss[] };

/**
 * Each copy is uploaded and searched with detection off; its original is the one relevant item, so average precision
 * is 1/rank (0 when it is not in the first SEARCH_LIMIT) and mAP is the mean reciprocal rank. Every copy whose original
 * did not come first is listed in `misses` (rank null: not found).
 */
async function evaluateNearDuplicates(api: Api, entries: Entry[]): Promise<NearDuplicateReport> {
  const ranks = new Map<string, (number | undefined)[]>(TRANSFORMS.map((transform) => [transform.name, []]));
  const misses: Miss[] = [];
  let done = 0;
  const total = entries.length * TRANSFORMS.reduce((sum, transform) => sum + transform.draws, 0);
  await forEachConcurrently(entries.entries(), async ([imageIndex, entry]) => {
    const { image, size } = await flattenedOriginal(await readFile(path.join(IMAGES_DIR, entry.file)));
    for (const [transformIndex, transform] of TRANSFORMS.entries()) {
      // Each (image, transform) pair has its own random stream, whatever runs before it.
      const random = seededRandom(SEED + imageIndex * TRANSFORMS.length + transformIndex);
      for (let draw = 0; draw < transform.draws; draw++) {
        const form = new FormData();
        form.set('image', new Blob([await transform.apply(image, size, random)]), `${entry.name}-${transform.name}`);
        form.set('detection', DETECTION_OFF);
        form.set('limit', String(SEARCH_LIMIT));
        const { result = [] } = await api.call<Ranked>('/uploadsearch', form);
        const rank = result.findIndex((item) => item.im_name === entry.name);
        ranks.get(transform.name)!.push(rank < 0 ? undefined : rank + 1);
        if (rank !== 0) misses.push({ im_name: entry.name, kind: entry.kind, transform: transform.name, rank: rank < 0 ? null : rank + 1 });
        if (++done % 100 === 0) console.log(`${done}/${total} near-duplicate searches`);
      }
    }
  });
  const byTransform = Object.fromEntries([...ranks].map(([name, list]) => [name, scores(list)]));
  const perTransform = Object.values(byTransform);
  // Every transform weighs the same, whatever its number of draws.
  const overall: RetrievalScores = {
    queries: perTransform.reduce((sum, s) => sum + s.queries, 0),
    r1: mean(perTransform.map((s) => s.r1)),
    r5: mean(perTransform.map((s) => s.r5)),
    map: mean(perTransform.map((s) => s.map)),
  };
  misses.sort((a, b) => a.transform.localeCompare(b.transform) || a.im_name.localeCompare(b.im_name));
  return { byTransform, overall, misses };
}

function scores(ranks: (number | undefined)[]): RetrievalScores {
  return {
    queries: ranks.length,
    r1: mean(ranks.map((rank) => (rank === 1 ? 1 : 0))),
    r5: mean(ranks.map((rank) => (rank !== undefined && rank <= 5 ? 1 : 0))),
    map: mean(ranks.map((rank) => (rank === undefined ? 0 : 1 / rank))),
  };
}

type CategoryScores = { queries: number; precisionAt5: number; ceiling: number };
type CategoryReport = { cutouts: number; fine: CategoryScores; top: CategoryScores };

/**
 * Each cut-out searched by its im_name; among the other cut-outs in its results, the share of the first five with
 * its category. The fine category (`animals/birds`) counts only cut-outs that share it with another; most are alone
 * in theirs, so the top level (`animals`) is reported too. `ceiling` is the best precision@5 the categories allow.
 */
async function evaluateCategories(api: Api, entries: Entry[]): Promise<CategoryReport> {
  const cutouts = entries.filter((entry) => entry.kind === 'object-cutout' && entry.category);
  const byName = new Map(cutouts.map((entry) => [entry.name, entry]));
  const topLevel = (entry: Entry) => entry.category!.split('/')[0]!;
  const fineHits: number[] = [];
  const topHits: number[] = [];
  await forEachConcurrently(cutouts.values(), async (query) => {
    const { result = [] } = await api.call<Ranked>(`/search?im_name=${encodeURIComponent(query.name)}&limit=${SEARCH_LIMIT}`);
    const firstFive = result.flatMap((item) => byName.get(item.im_name) ?? []).slice(0, 5);
    topHits.push(firstFive.filter((entry) => topLevel(entry) === topLevel(query)).length / 5);
    if (cutouts.some((other) => other !== query && other.category === query.category)) {
      fineHits.push(firstFive.filter((entry) => entry.category === query.category).length / 5);
    }
  });
  const ceiling = (same: (a: Entry, b: Entry) => boolean, queries: Entry[]) =>
    mean(queries.map((query) => Math.min(5, cutouts.filter((other) => other !== query && same(other, query)).length) / 5));
  const fineQueries = cutouts.filter((query) => cutouts.some((other) => other !== query && other.category === query.category));
  return {
    cutouts: cutouts.length,
    fine: { queries: fineHits.length, precisionAt5: mean(fineHits), ceiling: ceiling((a, b) => a.category === b.category, fineQueries) },
    top: { queries: topHits.length, precisionAt5: mean(topHits), ceiling: ceiling((a, b) => topLevel(a) === topLevel(b), cutouts) },
  };
}

function printTable(nearDuplicates: NearDuplicateReport, categories: CategoryReport): void {
  const percent = (share: number) => (share * 100).toFixed(1);
  const rows = [
    ...TRANSFORMS.map((transform) => [transform.name, nearDuplicates.byTransform[transform.name]!] as const),
    ['overall (mean of transforms)', nearDuplicates.overall] as const,
  ];
  console.log('\n| near-duplicate query | queries | R@1 % | R@5 % | mAP % |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, s] of rows) console.log(`| ${name} | ${s.queries} | ${percent(s.r1)} | ${percent(s.r5)} | ${percent(s.map)} |`);
  console.log(`\n| category retrieval (/search, ${categories.cutouts} cut-outs) | queries | precision@5 % | ceiling % |`);
  console.log('| --- | --- | --- | --- |');
  for (const [name, s] of [['fine category (shared with another cut-out)', categories.fine], ['top-level category', categories.top]] as const) {
    console.log(`| ${name} | ${s.queries} | ${percent(s.precisionAt5)} | ${percent(s.ceiling)} |`);
  }
}

const SENSITIVITIES = ['low', 'high'] as const;
type Sensitivity = (typeof SENSITIVITIES)[number];
/** Per sensitivity: every type's counts over all labelled photos, and over the photos of people alone. */
type DetectionReport = Record<Sensitivity, { all: Record<string, TypeCounts>; people: Record<string, TypeCounts> }>;

/**
 * Each photo of the ground truth uploaded to /discoversearch, every object it reports (detection_limit 30) scored
 * against the drawn boxes (scripts/lib/detection-truth.ts).
 */
async function evaluateDetection(api: Api): Promise<DetectionReport> {
  const truth = await loadDetectionTruth();
  const people = new Set(truth.people);
  const counts = Object.fromEntries(SENSITIVITIES.map((sensitivity) => [sensitivity, { all: new Map(), people: new Map() }])) as Record<
    Sensitivity,
    { all: Map<string, TypeCounts>; people: Map<string, TypeCounts> }
  >;
  await forEachConcurrently(truth.images.values(), async (image) => {
    const bytes = await readFile(path.join(FIXTURES_DIR, image.file));
    for (const sensitivity of SENSITIVITIES) {
      const form = new FormData();
      form.set('image', new Blob([bytes]), path.basename(image.file));
      form.set('detection_sensitivity', sensitivity);
      form.set('detection_limit', '30');
      form.set('result_limit', '1');
      const { objects } = await api.call<{ objects: Detected[] }>('/discoversearch', form);
      scoreImage(image, objects, counts[sensitivity].all);
      if (people.has(image.file)) scoreImage(image, objects, counts[sensitivity].people);
    }
  });
  const sorted = (map: Map<string, TypeCounts>) => Object.fromEntries([...map].sort(([a], [b]) => a.localeCompare(b)));
  return Object.fromEntries(SENSITIVITIES.map((sensitivity) => [sensitivity, { all: sorted(counts[sensitivity].all), people: sorted(counts[sensitivity].people) }])) as DetectionReport;
}

function printDetectionTable(report: DetectionReport): void {
  const cell = (counts: TypeCounts | undefined) => {
    const { truth, found, tp, precision, recall } = precisionRecall(counts ?? { tp: [], fp: [], fn: 0 });
    const percent = (share: number | null) => (share === null ? '-' : (share * 100).toFixed(0));
    return `${percent(precision)} (${tp}/${found}) | ${percent(recall)} (${tp}/${truth})`;
  };
  const types = [...new Set(SENSITIVITIES.flatMap((sensitivity) => Object.keys(report[sensitivity].all)))].sort();
  console.log('\n| detection (/discoversearch, IoU 0.5) | precision % low | recall % low | precision % high | recall % high |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const type of types) console.log(`| ${type} | ${SENSITIVITIES.map((sensitivity) => cell(report[sensitivity].all[type])).join(' | ')} |`);
  const total = (sensitivity: Sensitivity, set: 'all' | 'people') => overall(Object.values(report[sensitivity][set]));
  console.log(`| **all types** | ${SENSITIVITIES.map((sensitivity) => cell(total(sensitivity, 'all'))).join(' | ')} |`);
  console.log(`| people photos, all types | ${SENSITIVITIES.map((sensitivity) => cell(total(sensitivity, 'people'))).join(' | ')} |`);
}

/** Runs `task` over `items` with CONCURRENCY calls in flight. */
async function forEachConcurrently<T>(items: Iterator<T>, task: (item: T) => Promise<void>): Promise<void> {
  const worker = async () => {
    for (let next = items.next(); !next.done; next = items.next()) await task(next.value);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

main().then(
  () => stopAll(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    stopAll(1);
  },
);
