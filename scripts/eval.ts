import { readdir, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { seededRandom } from '../inference/src/random.ts';
import { IMAGES_DIR as IMAGES_DIR_DEFAULT } from '@edge-image-search/devtools/fixture-images';
import { freePort } from '@edge-image-search/devtools/free-port';
import { createApplication, imageNameOf, INSERT_BATCH, insertForm, waitForInsert, type AuthHeader } from './lib/api-client.ts';
import { chooseEmbedModels, loadedEmbedModels, namesOf, type LoadedModel } from './lib/embed-model-choice.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { loadDetectionTruth, FIXTURES_DIR, overall, precisionRecall, scoreImage, type Detected, type TypeCounts } from './lib/detection-truth.ts';
import { flattenedOriginal, TRANSFORMS } from '@edge-image-search/devtools/near-duplicates';
import { ROOT } from './lib/wrangler-env.ts';
import { nameColor } from '@edge-image-search/contract/attributes';
import { predictForm } from '@edge-image-search/contract/wire';

/**
 * `npm run eval [-- --images <folder>] [--embed-model <id>]... [--detection-only]`: search quality through the real
 * service (the local stack, as `npm start` runs it), for each embedding model the inference service loaded side by
 * side (INFERENCE_EMBED_MODELS; unset, the two bundled models of wrangler.toml's EMBED_MODELS). One application per
 * model, on that model, gets every valid image of the folder by URL; then, against each,
 * (a) near-duplicate copies of each image are searched with /uploadsearch for their original (R@1, R@5, mAP), and
 * (b) each object cut-out is searched with /search and the other cut-outs of its category among the first five are
 * counted (manifest.json's `kind` and `category`). (c) Each photo of the hand-drawn detection ground truth is sent to
 * /discoversearch at both sensitivities and precision and recall per type counted at IoU 0.5
 * (scripts/lib/detection-truth.ts): detection does not depend on the embedding model, so this runs once, on the
 * application of the service's default model (INFERENCE_EMBED_MODELS's first; else the first evaluated).
 * `--embed-model` (repeated, or comma-separated; `--models` is its older name) restricts the models to those it names,
 * by id, INFERENCE_EMBED_MODELS entry or the short label the tables use; a model the service has not loaded is refused,
 * listing those it has (scripts/lib/embed-model-choice.ts). `--detection-only` runs (c) alone. `--detector <entry>`
 * and `--pose <entry>` are the inference service's INFERENCE_DETECTOR and INFERENCE_POSE for the run (a built-in
 * name, a model folder or `hf:owner/repo[@revision]`: inference/README.md, "Detectors in the Hugging Face layout"), so
 * that (c) measures another detector or clothes parser on the same ground truth. (d) Each cut-out of
 * test/fixtures/colour-names.json (labelled by eye, apart from the colours the names' references were chosen on) is
 * named by the colour attribute's rule (the inference service's palette of it, then contract/attributes.ts), and the
 * names that agree counted.
 */

const { values: args } = parseArgs({
  options: {
    images: { type: 'string', default: IMAGES_DIR_DEFAULT },
    'embed-model': { type: 'string', multiple: true },
    models: { type: 'string' },
    'detection-only': { type: 'boolean', default: false },
    detector: { type: 'string' },
    pose: { type: 'string' },
  },
});
// What the inference service the stack starts reads from its environment.
if (args.detector) process.env.INFERENCE_DETECTOR = args.detector;
if (args.pose) process.env.INFERENCE_POSE = args.pose;
const IMAGES_DIR = path.resolve(args.images);
const STATE_DIR = path.join(ROOT, '.wrangler/eval-state');
const REPORT_FILE = path.join(ROOT, '.local/eval.json');
const ADMIN_TOKEN = 'eval-admin-token';
/** Seeds the copies: a given folder always gives the same queries. */
const SEED = 20240601;
/** Deep enough that a miss is a real miss on a collection of about a hundred images. */
const SEARCH_LIMIT = 100;
/** Any value that names no detectable type turns detection off: the whole upload is searched (docs/decisions.md, Detection). */
const DETECTION_OFF = 'none';
/** The spec calls an image with both sides under 100 px invalid. */
const MIN_SIDE = 100;
/** Two searches in flight keep both cores busy (the Worker, the inference service) on this machine. */
const CONCURRENCY = 2;
const IMAGE_EXTENSIONS = /\.(jpe?g|jpe|png|gif|bmp|dib|webp|pbm|pgm|ppm|sr|ras|tiff?)$/i;

type Entry = { file: string; name: string; kind?: string; category?: string };
type Ranked = { result?: { im_name: string }[] };
/** A model the inference service loaded; `label` is the short name the tables give it (its dimensions). */
type EmbedModel = LoadedModel;
/** A model's application, loaded with the folder's images; `failed` names the images its inserts could not take. */
type ModelApp = { model: EmbedModel; api: Api; failed: Set<string>; insertSeconds: number };
type ModelRetrieval = { app: ModelApp; nearDuplicates: NearDuplicateReport; categories: CategoryReport; searchSeconds: number };

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
  const models = await selectedModels(stack);
  const detectionModel = models.find((model) => model.isDefault) ?? models[0]!;
  const evaluatedModels = args['detection-only'] ? [detectionModel] : models;

  const apps: ModelApp[] = [];
  for (const model of evaluatedModels) apps.push(await loadModelApp(stack.baseUrl, model, valid, `http://127.0.0.1:${imagesPort}`));
  // Every model is scored on the same queries: the images that all of them took.
  const inserted = valid.filter((entry) => apps.every((app) => !app.failed.has(entry.name)));

  const searchStarted = performance.now();
  const retrievals: ModelRetrieval[] = [];
  if (!args['detection-only']) for (const app of apps) retrievals.push(await evaluateRetrieval(app, inserted));
  const detectionApp = apps.find((app) => app.model === detectionModel)!;
  console.log(`detection, on the application of ${detectionModel.label}...`);
  const detection = await evaluateDetection(detectionApp.api);
  const colourNames = await evaluateColourNames(stack);
  const searchSeconds = (performance.now() - searchStarted) / 1000;

  printModelLegend(evaluatedModels);
  if (retrievals.length > 0) printRetrievalTables(retrievals);
  printDetectionTable(detection);
  printColourNames(colourNames);
  const report = {
    images: { folder: IMAGES_DIR, inserted: inserted.length, skipped },
    settings: { endpoint: '/uploadsearch', upload: 'image bytes', detection: DETECTION_OFF, limit: SEARCH_LIMIT, seed: SEED },
    transforms: TRANSFORMS.map(({ name, description, draws }) => ({ name, description, draws })),
    models: Object.fromEntries(apps.map((app) => [app.model.id, modelSection(app, retrievals.find((retrieval) => retrieval.app === app))])),
    detection: { model: detectionModel.id, detector: process.env.INFERENCE_DETECTOR || 'centernet', ...detection },
    colourNames,
    seconds: { search: searchSeconds, total: (performance.now() - started) / 1000 },
  };
  await mkdir(path.dirname(REPORT_FILE), { recursive: true });
  await writeFile(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${inserted.length} images, ${apps.length} model${apps.length === 1 ? '' : 's'}; ${searchSeconds.toFixed(0)} s of searches, ${report.seconds.total.toFixed(0)} s in all. JSON: ${REPORT_FILE}`);
}

/**
 * The models the stack's inference service loaded, in INFERENCE_EMBED_MODELS's order (unset: the bundled ones, those
 * of wrangler.toml's EMBED_MODELS), each labelled by its dimensions (with its position after them where two share
 * dimensions); `--embed-model` (and `--models`) keep those they name, and refuse a model not loaded.
 */
async function selectedModels({ inferenceUrl }: LocalStack): Promise<EmbedModel[]> {
  const loaded = await loadedEmbedModels(inferenceUrl);
  const named = namesOf([...(args['embed-model'] ?? []), ...(args.models === undefined ? [] : [args.models])]);
  if (args['embed-model'] === undefined && args.models === undefined) return loaded;
  if (named.length === 0) throw new Error('--embed-model: name at least one model');
  return chooseEmbedModels(loaded, named);
}

/** A new application on `model`, with every image of `entries` inserted. */
async function loadModelApp(baseUrl: string, model: EmbedModel, entries: Entry[], imagesUrl: string): Promise<ModelApp> {
  const auth = await createApplication({ baseUrl, token: ADMIN_TOKEN }, `eval-${model.label}`, model.id).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    // The Worker takes applications on the models of its EMBED_MODELS only (README "Model upgrades").
    if (!message.includes('is not one of')) throw error;
    throw new Error(`${message}\nThe inference service loaded ${model.id}, but the local Worker's EMBED_MODELS does not list it.`);
  });
  const api = new Api(baseUrl, auth);
  const insertStarted = performance.now();
  const failed = await insertAll(api, entries, imagesUrl);
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  const failures = failed.size ? `; failed: ${[...failed].join(', ')}` : '';
  console.log(`${model.label}: inserted ${entries.length - failed.size} images in ${insertSeconds.toFixed(0)} s${failures}`);
  return { model, api, failed, insertSeconds };
}

async function evaluateRetrieval(app: ModelApp, entries: Entry[]): Promise<ModelRetrieval> {
  console.log(`${app.model.label}: near-duplicate and category searches...`);
  const started = performance.now();
  const nearDuplicates = await evaluateNearDuplicates(app.api, entries);
  const categories = await evaluateCategories(app.api, entries);
  return { app, nearDuplicates, categories, searchSeconds: (performance.now() - started) / 1000 };
}

/** A model's part of the JSON report: its label, the images it failed to take, its scores and times. */
function modelSection({ model, failed, insertSeconds }: ModelApp, retrieval: ModelRetrieval | undefined) {
  return {
    label: model.label,
    entry: model.entryName,
    dimensions: model.dimensions,
    default: model.isDefault,
    failed: [...failed],
    nearDuplicates: retrieval?.nearDuplicates,
    categories: retrieval?.categories,
    seconds: { insert: insertSeconds, search: retrieval?.searchSeconds },
  };
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

function printModelLegend(models: EmbedModel[]): void {
  printMarkdownTable(
    ['model', 'dimensions', 'embedding model id'],
    models.map((model) => [model.label, String(model.dimensions), `${model.id}${model.isDefault ? ' (the service\'s default)' : ''}`]),
  );
}

/** The near-duplicate and category tables, the models side by side. */
function printRetrievalTables(retrievals: ModelRetrieval[]): void {
  printSideBySide(
    retrievals,
    'near-duplicate query',
    [
      ...TRANSFORMS.map((transform) => ({ name: transform.name, scoresOf: (retrieval: ModelRetrieval) => retrieval.nearDuplicates.byTransform[transform.name]! })),
      { name: 'overall (mean of transforms)', scoresOf: (retrieval) => retrieval.nearDuplicates.overall },
    ],
    [['queries', (s) => String(s.queries)]],
    [['R@1 %', (s) => s.r1], ['R@5 %', (s) => s.r5], ['mAP %', (s) => s.map]],
  );
  printSideBySide(
    retrievals,
    `category retrieval (/search, ${retrievals[0]!.categories.cutouts} cut-outs)`,
    [
      { name: 'fine category (shared with another cut-out)', scoresOf: (retrieval: ModelRetrieval) => retrieval.categories.fine },
      { name: 'top-level category', scoresOf: (retrieval) => retrieval.categories.top },
    ],
    [['queries', (s) => String(s.queries)], ['ceiling %', (s) => percent(s.ceiling)]],
    [['precision@5 %', (s) => s.precisionAt5]],
  );
}

/**
 * A table of `rows`, each measure with a column per model (`R@1 % 448d | R@1 % 376d | R@5 % 448d | ...`). Every model
 * ran the same queries, so the `shared` columns (their counts, the categories' ceiling) are given once, from the first.
 */
function printSideBySide<S>(
  retrievals: ModelRetrieval[],
  title: string,
  rows: { name: string; scoresOf: (retrieval: ModelRetrieval) => S }[],
  shared: [string, (scores: S) => string][],
  measures: [string, (scores: S) => number][],
): void {
  printMarkdownTable(
    [title, ...shared.map(([column]) => column), ...measures.flatMap(([measure]) => retrievals.map((retrieval) => `${measure} ${retrieval.app.model.label}`))],
    rows.map(({ name, scoresOf }) => [
      name,
      ...shared.map(([, cell]) => cell(scoresOf(retrievals[0]!))),
      ...measures.flatMap(([, value]) => retrievals.map((retrieval) => percent(value(scoresOf(retrieval))))),
    ]),
  );
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
  /** A precision cell and a recall cell per sensitivity. */
  const cells = (countsOf: (sensitivity: Sensitivity) => TypeCounts | undefined) =>
    SENSITIVITIES.flatMap((sensitivity) => {
      const { truth, found, tp, precision, recall } = precisionRecall(countsOf(sensitivity) ?? { tp: [], fp: [], fn: 0 });
      const whole = (share: number | null) => (share === null ? '-' : (share * 100).toFixed(0));
      return [`${whole(precision)} (${tp}/${found})`, `${whole(recall)} (${tp}/${truth})`];
    });
  const types = [...new Set(SENSITIVITIES.flatMap((sensitivity) => Object.keys(report[sensitivity].all)))].sort();
  const total = (set: 'all' | 'people') => (sensitivity: Sensitivity) => overall(Object.values(report[sensitivity][set]));
  printMarkdownTable(
    ['detection (/discoversearch, IoU 0.5)', ...SENSITIVITIES.flatMap((sensitivity) => [`precision % ${sensitivity}`, `recall % ${sensitivity}`])],
    [
      ...types.map((type) => [type, ...cells((sensitivity) => report[sensitivity].all[type])]),
      ['**all types**', ...cells(total('all'))],
      ['people photos, all types', ...cells(total('people'))],
    ],
  );
}

function printMarkdownTable(header: string[], rows: string[][]): void {
  console.log(`\n| ${header.join(' | ')} |`);
  console.log(`|${' --- |'.repeat(header.length)}`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

/** Runs `task` over `items` with CONCURRENCY calls in flight. */
async function forEachConcurrently<T>(items: Iterator<T>, task: (item: T) => Promise<void>): Promise<void> {
  const worker = async () => {
    for (let next = items.next(); !next.done; next = items.next()) await task(next.value);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const percent = (share: number): string => (share * 100).toFixed(1);

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

type ColourNameReport = { right: number; total: number; misses: { file: string; label: string; named: string | undefined }[] };

/** (d): each labelled cut-out's palette, from the inference service, named as an object's colour attribute is. */
async function evaluateColourNames(local: LocalStack): Promise<ColourNameReport> {
  const labels = JSON.parse(await readFile(path.join(FIXTURES_DIR, 'colour-names.json'), 'utf8')) as Record<string, string>;
  const misses: ColourNameReport['misses'] = [];
  for (const [file, label] of Object.entries(labels)) {
    const form = predictForm(await readFile(path.join(FIXTURES_DIR, 'images', file)), ['colors']);
    const response = await fetch(`${local.inferenceUrl}/predict`, { method: 'POST', body: form, headers: { authorization: `Bearer ${local.inferenceSecret}` } });
    const { colors } = (await response.json()) as { colors: { palette: { hex: string; ratio: number }[] } };
    const named = nameColor(colors.palette);
    if (named !== label) misses.push({ file, label, named });
  }
  const total = Object.keys(labels).length;
  return { right: total - misses.length, total, misses };
}

function printColourNames({ right, total, misses }: ColourNameReport): void {
  console.log(`\ncolour names (the colour attribute) on ${total} labelled cut-outs: ${right} right (${((100 * right) / total).toFixed(0)} %)`);
  for (const miss of misses) console.log(`  ${miss.file}: labelled ${miss.label}, named ${miss.named ?? 'nothing'}`);
}
