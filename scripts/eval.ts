import { rmSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { seededRandom } from '../inference/src/random.ts';
import { IMAGES_DIR as IMAGES_DIR_DEFAULT } from '@edge-image-search/devtools/fixture-images';
import { freePort } from '@edge-image-search/devtools/free-port';
import { commandLogFile, openCommandLog, type CommandLog } from './lib/command-log.ts';
import { createApplicationWithId, imageNameOf, INSERT_BATCH, insertForm, waitForInsert, type AuthHeader } from './lib/api-client.ts';
import { adminRequest, type Field } from './lib/admin-client.ts';
import { chooseEmbedModels, loadedEmbedModels, namesOf, type LoadedModel } from './lib/embed-model-choice.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { loadDetectionTruth, FIXTURES_DIR, overall, precisionRecall, scoreImage, type Detected, type TypeCounts } from './lib/detection-truth.ts';
import { flattenedOriginal, TRANSFORMS } from '@edge-image-search/devtools/near-duplicates';
import { ROOT } from './lib/wrangler-env.ts';
import { nameColor } from '@edge-image-search/contract/attributes';
import { predictForm } from '@edge-image-search/contract/wire';
import { shapeCatalog } from '@edge-image-search/devtools/shape-catalog';
import { isHeldOut } from '../src/tuning/held-out.ts';

/**
 * `npm run eval [-- --images <folder>] [--embed-model <id>]... [--detection-only | --tuning-only] [--tuning-images <folder>]`:
 * search quality through the real service (the local stack, as `npm start` runs it), for each embedding model the
 * inference service loaded side by side (INFERENCE_EMBED_MODELS; unset, the two bundled models of wrangler.toml's
 * EMBED_MODELS). One application per model, on that model, gets every valid image of the folder by URL; then,
 * against each,
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
 * names that agree counted. (e) Tuning on a label field (docs/decisions.md, "Tuning on a label field"): labelled sets
 * (a catalog of flat shapes by shape, the cut-outs by top-level category, and with `--tuning-images <folder>` every
 * image under a folder by its first-level subfolder) each get a new application on each evaluated model, which is
 * tuned (`apply: always`); the held-out images are searched with /search before and after, and the precision@5
 * recomputed there set beside the tuning's own report; then, on the default model, how many labels per shape it
 * needs. The report and the recomputation must agree: a disagreement is printed loudly. `--tuning-only` runs (e)
 * alone (about 3.5 minutes here; `--tuning-images /usr/share/tuxpaint/stamps` adds about 5 more).
 * The terminal shows the progress and the tables; the local stack's output (migrations, wrangler, the Worker's request
 * lines, the inference service) goes to `.local/logs/eval.log`, whose last lines a failed run prints.
 */

const { values: args } = parseArgs({
  options: {
    images: { type: 'string', default: IMAGES_DIR_DEFAULT },
    'embed-model': { type: 'string', multiple: true },
    models: { type: 'string' },
    'detection-only': { type: 'boolean', default: false },
    'tuning-only': { type: 'boolean', default: false },
    'tuning-images': { type: 'string' },
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
/** (e): the shapes catalog tuned on, 20 of each shape, drawn with a seed of its own (the tests draw 7, 3, 5 and 99). */
const TUNING_SHAPES = { perShape: 20, seed: 11 };
/** (e): the labels per shape that "how many labels it needs" leaves on the images a tuning fits. */
const LABELS_NEEDED = [1, 3, 5, 10];
/** A label is fitted and scored when this many images carry it (src/admin/tuning.ts, MIN_LABELLED_PER_CLASS). */
const MIN_PER_LABEL = 3;
/** The tuning's report searches at most this many held-out images (src/ingest/tuning.ts, MAX_HELD_OUT_QUERIES). */
const MAX_HELD_OUT_QUERIES = 200;
/** The tuning's report counts its precision at this rank (`precision_at_5`), as `/search` with `limit=5` answers. */
const TUNING_PRECISION_AT = 5;
/** On this machine a 100-image tuning takes seconds; a stuck one is reported, not waited on for ever. */
const TUNING_TIMEOUT_MS = 15 * 60_000;
/**
 * A tuning whose step keeps failing has noted its error and stopped moving: past the queue's retries (backoff 2, 4, 8
 * and 16 s, then the dead-letter queue) only the sweeper resumes it, after 30 minutes. Eval reports it as stuck.
 */
const TUNING_STUCK_MS = 40_000;

type Entry = { file: string; name: string; kind?: string; category?: string };
type Ranked = { result?: { im_name: string }[] };
/** A model the inference service loaded; `label` is the short name the tables give it (its dimensions). */
type EmbedModel = LoadedModel;
/** A model's application, loaded with the folder's images; `failed` names the images its inserts could not take. */
type ModelApp = { model: EmbedModel; api: Api; failed: Set<string>; insertSeconds: number };
type ModelRetrieval = { app: ModelApp; nearDuplicates: NearDuplicateReport; categories: CategoryReport; searchSeconds: number };

let stack: LocalStack | undefined;
/** The local stack's output, opened (emptied) once the arguments are read. */
let stackLog: CommandLog | undefined;
const imageServers: http.Server[] = [];
/** (e)'s rendered images. */
let tuningTemp: string | undefined;
function stopAll(code: number): never {
  stack?.stop();
  for (const server of imageServers) server.close();
  if (tuningTemp) rmSync(tuningTemp, { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => stopAll(130));
process.on('SIGTERM', () => stopAll(143));

async function main(): Promise<void> {
  const started = performance.now();
  if (args['detection-only'] && args['tuning-only']) throw new Error('--detection-only and --tuning-only each run one section: name one');
  const listed = args['tuning-only'] ? undefined : await listImages(IMAGES_DIR);
  if (listed) console.log(`${listed.valid.length} images in ${IMAGES_DIR}; ${listed.skipped.length} skipped as invalid (under ${MIN_SIDE} px on both sides): ${listed.skipped.join(', ') || 'none'}`);
  // Before the stack starts: a wrong folder is refused at once.
  const tuningSets = args['detection-only'] ? undefined : await labelledSets();

  await rm(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  imageServers.push(await serveFiles(imagesPort, (file) => path.join(IMAGES_DIR, file)));
  stackLog = openCommandLog(commandLogFile('eval'));
  console.log(`The local stack's output: ${stackLog.shown}`);
  stack = await startLocalStack({
    port,
    inferencePort,
    adminToken: ADMIN_TOKEN,
    persistTo: STATE_DIR,
    log: stackLog.fd,
    onExit: (code) => {
      console.error(stackLog!.failure(`wrangler stopped (exit code ${code}).`));
      stopAll(1);
    },
  });
  const models = await selectedModels(stack);
  const defaultModel = models.find((model) => model.isDefault) ?? models[0]!;

  const searches = listed ? await searchSections(stack, listed, models, defaultModel, `http://127.0.0.1:${imagesPort}`) : undefined;
  const tuning = tuningSets ? await evaluateTuning(stack.baseUrl, tuningSets, models, defaultModel) : undefined;
  if (searches) printSearchSections(searches);
  if (tuning) printTuning(tuning);
  const report = { ...searches?.report, ...(tuning && { tuning }), seconds: { search: searches?.searchSeconds, total: (performance.now() - started) / 1000 } };
  await mkdir(path.dirname(REPORT_FILE), { recursive: true });
  await writeFile(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
  const parts = [
    ...(searches ? [`${searches.report.images.inserted} images, ${searches.apps.length} model${searches.apps.length === 1 ? '' : 's'}; ${searches.searchSeconds.toFixed(0)} s of searches`] : []),
    ...(tuning ? [`tuning ${tuning.seconds.toFixed(0)} s`] : []),
  ];
  console.log(`\n${parts.join('; ')}; ${report.seconds.total.toFixed(0)} s in all. JSON: ${REPORT_FILE}; the local stack's output: ${stackLog.shown}`);
  if (tuning?.disagreements.length) console.error(`\nTUNING REPORT AND /search DISAGREE (${tuning.disagreements.length}): ${tuning.disagreements.join('; ')}`);
}

type SearchSections = Awaited<ReturnType<typeof searchSections>>;

/** Sections (a) to (d): every model's application loaded with the folder's images, searched, and detection and colours on the default one's. */
async function searchSections(local: LocalStack, { valid, skipped }: { valid: Entry[]; skipped: string[] }, models: EmbedModel[], detectionModel: EmbedModel, imagesUrl: string) {
  const evaluatedModels = args['detection-only'] ? [detectionModel] : models;
  const apps: ModelApp[] = [];
  for (const model of evaluatedModels) apps.push(await loadModelApp(local.baseUrl, model, valid, imagesUrl));
  // Every model is scored on the same queries: the images that all of them took.
  const inserted = valid.filter((entry) => apps.every((app) => !app.failed.has(entry.name)));

  const searchStarted = performance.now();
  const retrievals: ModelRetrieval[] = [];
  if (!args['detection-only']) for (const app of apps) retrievals.push(await evaluateRetrieval(app, inserted));
  const detectionApp = apps.find((app) => app.model === detectionModel)!;
  console.log(`detection, on the application of ${detectionModel.label}...`);
  const detection = await evaluateDetection(detectionApp.api);
  const colourNames = await evaluateColourNames(local);
  const searchSeconds = (performance.now() - searchStarted) / 1000;
  const report = {
    images: { folder: IMAGES_DIR, inserted: inserted.length, skipped },
    settings: { endpoint: '/uploadsearch', upload: 'image bytes', detection: DETECTION_OFF, limit: SEARCH_LIMIT, seed: SEED },
    transforms: TRANSFORMS.map(({ name, description, draws }) => ({ name, description, draws })),
    models: Object.fromEntries(apps.map((app) => [app.model.id, modelSection(app, retrievals.find((retrieval) => retrieval.app === app))])),
    detection: { model: detectionModel.id, detector: process.env.INFERENCE_DETECTOR || 'centernet', ...detection },
    colourNames,
  };
  return { apps, evaluatedModels, retrievals, detection, colourNames, searchSeconds, report };
}

function printSearchSections({ evaluatedModels, retrievals, detection, colourNames }: SearchSections): void {
  printModelLegend(evaluatedModels);
  if (retrievals.length > 0) printRetrievalTables(retrievals);
  printDetectionTable(detection);
  printColourNames(colourNames);
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

/** A new application named `name` on `model` (with the metadata schema `fields` if given): its id and its API. */
async function newApplication(baseUrl: string, name: string, model: EmbedModel, fields?: Field[]): Promise<{ appId: string; api: Api }> {
  const { appId, auth } = await createApplicationWithId({ baseUrl, token: ADMIN_TOKEN }, name, model.id, fields).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    // The Worker takes applications on the models of its EMBED_MODELS only (README "Model upgrades").
    if (!message.includes('is not one of')) throw error;
    throw new Error(`${message}\nThe inference service loaded ${model.id}, but the local Worker's EMBED_MODELS does not list it.`);
  });
  return { appId, api: new Api(baseUrl, auth) };
}

/** A new application on `model`, with every image of `entries` inserted. */
async function loadModelApp(baseUrl: string, model: EmbedModel, entries: Entry[], imagesUrl: string): Promise<ModelApp> {
  const { api } = await newApplication(baseUrl, `eval-${model.label}`, model);
  const insertStarted = performance.now();
  const failed = await insertAll(api, entries.map((entry) => ({ name: entry.name, url: `${imagesUrl}/${encodeURIComponent(entry.file)}` })));
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

/** The images of `folder` (not its subfolders), with kind and category from its manifest.json where it has one. */
async function listImages(folder: string): Promise<{ valid: Entry[]; skipped: string[] }> {
  const files = (await readdir(folder)).filter((file) => IMAGE_EXTENSIONS.test(file)).sort();
  const manifest = await readFile(path.join(folder, 'manifest.json'), 'utf8').then(
    (text) => new Map((JSON.parse(text) as Entry[]).map((entry) => [entry.file, entry])),
    () => new Map<string, Entry>(),
  );
  const valid: Entry[] = [];
  const skipped: string[] = [];
  for (const file of files) {
    if (await tooSmall(path.join(folder, file))) {
      skipped.push(file);
      continue;
    }
    valid.push({ ...manifest.get(file), file, name: imageNameOf(file) });
  }
  return { valid, skipped };
}

/** Invalid by the spec: under MIN_SIDE px on both sides. */
async function tooSmall(file: string): Promise<boolean> {
  const { width = 0, height = 0 } = await sharp(file).metadata();
  return width < MIN_SIDE && height < MIN_SIDE;
}

/** Files over HTTP, so that /insert can download them by im_url: `/<name>` is the file `pathOf(name)` names. */
function serveFiles(port: number, pathOf: (name: string) => string | undefined): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const file = pathOf(path.basename(decodeURIComponent((request.url ?? '/').split('?')[0]!)));
    (file === undefined ? Promise.reject(new Error('not served')) : readFile(file)).then(
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

/** Inserts by URL (with their metadata) in batches of the spec's 100 and waits until every transaction is at 100 %; the names that failed. */
async function insertAll(api: Api, images: { name: string; url: string; metadata?: Record<string, string> }[]): Promise<Set<string>> {
  const transactions: number[] = [];
  for (let start = 0; start < images.length; start += INSERT_BATCH) {
    transactions.push((await api.call<{ trans_id: number }>('/insert', insertForm(images.slice(start, start + INSERT_BATCH)))).trans_id);
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
        // A quarter at a time: the whole run prints under 100 lines.
        if (++done % Math.ceil(total / 4) === 0) console.log(`${done}/${total} near-duplicate searches`);
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

/** A cut-out's top-level category: `animals` for `animals/birds`. */
const topLevel = (entry: Entry): string => entry.category!.split('/')[0]!;

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
    const message = error instanceof Error ? error.message : String(error);
    console.error(stackLog ? stackLog.failure(`npm run eval failed: ${message}`) : message);
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

/** An image of a labelled set: `label` is what its metadata carries (undefined: none), `truth` its class all the same. */
type LabelledImage = { name: string; file: string; key: string; label: string | undefined; truth: string };
/** A labelled set (e) tunes an application on: `field` is its label field; `skipped` what the set left out and why. */
type LabelledSet = { name: string; field: string; images: LabelledImage[]; skipped: Record<string, number> };
type TuningSets = { sets: LabelledSet[]; shapes: LabelledSet };

/**
 * (e)'s sets, made before the stack starts: the shapes catalog rendered to PNG in a temporary folder, the cut-outs of
 * the fixtures by top-level category, and `--tuning-images`'s folder by first-level subfolder.
 */
async function labelledSets(): Promise<TuningSets> {
  tuningTemp = await mkdtemp(path.join(tmpdir(), 'eval-tuning-'));
  const shapes = await shapesSet(path.join(tuningTemp, 'shapes'));
  const sets = [shapes, await cutoutSet()];
  if (args['tuning-images']) sets.push(await folderSet(path.resolve(args['tuning-images']), path.join(tuningTemp, 'folder')));
  for (const set of sets) {
    const labels = new Set(set.images.flatMap((image) => image.label ?? []));
    const skipped = Object.entries(set.skipped).map(([why, count]) => `${count} ${why}`);
    console.log(`tuning set "${set.name}": ${set.images.length} images, ${labels.size} labels of ${set.field}${skipped.length ? `; left out: ${skipped.join(', ')}` : ''}`);
  }
  return { sets, shapes };
}

/** devtools/shape-catalog.ts's flat shapes, labelled `shape`, each rendered from its SVG to PNG as the fixture server does. */
async function shapesSet(folder: string): Promise<LabelledSet> {
  await mkdir(folder, { recursive: true });
  const { perShape, seed } = TUNING_SHAPES;
  const images = await Promise.all(
    shapeCatalog(perShape, seed).map(async ({ name, shape, svg }) => {
      const file = path.join(folder, `${name}.png`);
      await sharp(Buffer.from(svg)).png().toFile(file);
      return { name, file, key: `shapes~${name}`, label: shape, truth: shape };
    }),
  );
  return { name: `shapes (seed ${seed})`, field: 'shape', images, skipped: {} };
}

/** The fixtures' valid object cut-outs by top-level category, those of a category with fewer than MIN_PER_LABEL left out. */
async function cutoutSet(): Promise<LabelledSet> {
  const cutouts = (await listImages(IMAGES_DIR_DEFAULT)).valid.filter((entry) => entry.kind === 'object-cutout' && entry.category);
  const counts = countBy(cutouts, topLevel);
  const kept = cutouts.filter((entry) => counts.get(topLevel(entry))! >= MIN_PER_LABEL);
  const images = kept.map((entry) => ({ name: entry.name, file: path.join(IMAGES_DIR_DEFAULT, entry.file), key: `cutouts~${entry.name}`, label: topLevel(entry), truth: topLevel(entry) }));
  const skipped = cutouts.length - kept.length;
  return { name: 'cut-outs (top-level category)', field: 'category', images, skipped: skipped ? { [`in a category of fewer than ${MIN_PER_LABEL}`]: skipped } : {} };
}

/**
 * Every image under `root` labelled `category` by its first-level subfolder. Left out: files named `*_mirror*` (Tux
 * Paint's mirrored copies of a stamp), an SVG beside a raster image of the same name (the same drawing twice), files
 * directly in `root`, and images under MIN_SIDE px on both sides; an SVG is rendered to PNG at its own size.
 */
async function folderSet(root: string, rendered: string): Promise<LabelledSet> {
  await mkdir(rendered, { recursive: true });
  const isSvg = (file: string) => /\.svg$/i.test(file);
  const stem = (file: string) => file.replace(/\.[^.]*$/, '');
  const files = (await readdir(root, { recursive: true })).filter((file) => IMAGE_EXTENSIONS.test(file) || isSvg(file)).sort();
  const rasters = new Set(files.filter((file) => !isSvg(file)).map(stem));
  const skipped: Record<string, number> = {};
  const skip = (why: string) => (skipped[why] = (skipped[why] ?? 0) + 1);
  const images: LabelledImage[] = [];
  const names = new Set<string>();
  for (const file of files) {
    const [label, ...rest] = file.split(path.sep);
    const name = imageNameOf(file.split(path.sep).join('_'));
    if (rest.length === 0) skip('not in a subfolder');
    else if (path.basename(file).includes('_mirror')) skip('mirrored copies (*_mirror*)');
    else if (isSvg(file) && rasters.has(stem(file))) skip('SVGs beside a raster image of the same name');
    else if (names.has(name)) skip('names taken by another file');
    else {
      const source = isSvg(file) ? path.join(rendered, `${name}.png`) : path.join(root, file);
      if (isSvg(file)) await sharp(path.join(root, file)).png().toFile(source);
      if (await tooSmall(source)) skip(`under ${MIN_SIDE} px on both sides`);
      else {
        names.add(name);
        images.push({ name, file: source, key: `folder~${name}`, label, truth: label! });
      }
    }
  }
  if (images.length === 0) throw new Error(`--tuning-images ${root}: no image in a subfolder of it`);
  return { name: `${path.basename(root)} (first-level folder)`, field: 'category', images, skipped };
}

/** The shapes catalog with, per shape, only the first `n` not-held-out images labelled; every held-out one keeps its label, to be scored. */
function fewLabels(shapes: LabelledSet, n: number): LabelledSet {
  const seen = new Map<string, number>();
  const images = shapes.images.map((image) => {
    if (isHeldOut(image.name)) return image;
    const rank = seen.get(image.truth) ?? 0;
    seen.set(image.truth, rank + 1);
    return rank < n ? image : { ...image, label: undefined };
  });
  return { ...shapes, name: `shapes, ${n} labelled per shape`, images };
}

type Precision = { before: number | null; after: number | null };
type TuningRun = {
  set: string;
  model: string;
  modelLabel: string;
  images: number;
  failed: string[];
  /** What the API answered: 202, or 400 with its message (`refused`). */
  refused?: string;
  classes?: number;
  labelled?: number;
  fitted?: number;
  state?: string;
  applied?: boolean | null;
  error?: string | null;
  /** The tuning's own report (GET .../tune's held_out), and the same held-out images searched here through /search. */
  report?: { queries: number; precisionAt5: Precision };
  recomputed: { queries: number; precisionAt5: Precision; byTrueLabel: Precision };
  /** Whether the report and the recomputation agree (queries and both precisions); not compared when the tuning did not finish. */
  agree?: boolean;
  seconds: { insert: number; tuning?: number };
};
type TuningAnswer = {
  tuned: boolean;
  tuning: {
    state: 'running' | 'done' | 'failed';
    applied: boolean | null;
    classes: number;
    labelled: number;
    fitted: number;
    held_out: { queries: number; precision_at_5: { before: number | null; after: number | null } };
    phase: string | null;
    error: string | null;
    updated_at: string;
  };
};

/**
 * (e): each labelled set on each evaluated model, then the sweep of labels per shape on the default model; the
 * images served from this process (rendered ones from the temporary folder).
 */
async function evaluateTuning(baseUrl: string, { sets, shapes }: TuningSets, models: EmbedModel[], defaultModel: EmbedModel) {
  const started = performance.now();
  const files = new Map(sets.flatMap((set) => set.images.map((image) => [image.key, image.file] as const)));
  const port = await freePort();
  imageServers.push(await serveFiles(port, (key) => files.get(key)));
  const imagesUrl = `http://127.0.0.1:${port}`;
  const runs: TuningRun[] = [];
  for (const model of models) for (const set of sets) runs.push(await tuneLabelledSet(baseUrl, set, model, imagesUrl));
  const labelsNeeded: (TuningRun & { labelsPerShape: number })[] = [];
  for (const n of LABELS_NEEDED) labelsNeeded.push({ labelsPerShape: n, ...(await tuneLabelledSet(baseUrl, fewLabels(shapes, n), defaultModel, imagesUrl)) });
  await rm(tuningTemp!, { recursive: true, force: true });
  const disagreements = [...runs, ...labelsNeeded].filter((run) => run.agree === false).map((run) => `${run.set} on ${run.modelLabel}`);
  return {
    settings: { apply: 'always', precisionAt: TUNING_PRECISION_AT, minPerLabel: MIN_PER_LABEL, shapes: TUNING_SHAPES, labelsNeeded: LABELS_NEEDED, labelsNeededModel: defaultModel.id },
    sets: runs,
    labelsNeeded,
    disagreements,
    seconds: (performance.now() - started) / 1000,
  };
}

type TuningReport = Awaited<ReturnType<typeof evaluateTuning>>;

/**
 * A new application on `model` with the set's images inserted by URL (each label as its `field`), its held-out
 * images searched, tuned with `apply: always`, waited for (the time from the POST to done), searched again.
 */
async function tuneLabelledSet(baseUrl: string, set: LabelledSet, model: EmbedModel, imagesUrl: string): Promise<TuningRun> {
  const admin = { baseUrl, token: ADMIN_TOKEN };
  const { appId, api } = await newApplication(baseUrl, `eval-tuning-${set.name}-${model.label}`, model, [{ name: set.field, type: 'string', searchable: true }]);
  const insertStarted = performance.now();
  const failed = await insertAll(
    api,
    set.images.map((image) => ({ name: image.name, url: `${imagesUrl}/${encodeURIComponent(image.key)}`, ...(image.label !== undefined && { metadata: { [set.field]: image.label } }) })),
  );
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  const inserted = set.images.filter((image) => !failed.has(image.name));
  // One line a set, once its tuning has ended: what was inserted, then how the tuning went.
  const insertedLine = `${model.label}, ${set.name}: inserted ${inserted.length} images in ${insertSeconds.toFixed(0)} s${failed.size ? ` (failed: ${[...failed].join(', ')})` : ''}`;
  // The images the report searches: labelled with a label the tuning fits, held out; at most as many as it searches.
  const counts = countBy(inserted.filter((image) => image.label !== undefined), (image) => image.label!);
  const queries = inserted.filter((image) => image.label !== undefined && counts.get(image.label)! >= MIN_PER_LABEL && isHeldOut(image.name)).slice(0, MAX_HELD_OUT_QUERIES);
  const before = await heldOutPrecision(api, queries, inserted);

  const common = { set: set.name, model: model.id, modelLabel: model.label, images: inserted.length, failed: [...failed] };
  const tuningStarted = performance.now();
  const posted = await adminRequest<{ error_message?: string; message?: string }>(admin, 'POST', `/admin/apps/${appId}/tune`, { label_field: set.field, apply: 'always' });
  if (posted.status !== 202) {
    const refused = `HTTP ${posted.status}: ${posted.body.error_message ?? posted.body.message ?? JSON.stringify(posted.body)}`;
    console.log(`${insertedLine}; tuning refused, ${refused}`);
    return { ...common, refused, recomputed: recomputation(queries, before), seconds: { insert: insertSeconds } };
  }
  const { tuning, stuck } = await waitForTuning(admin, appId);
  const tuningSeconds = (performance.now() - tuningStarted) / 1000;
  if (stuck) {
    console.error(`!!! ${insertedLine}; the tuning is stuck in ${tuning.phase} after ${tuningSeconds.toFixed(0)} s, its step failing: ${tuning.error}; untuned`);
    const { classes, labelled, fitted, error } = tuning;
    return { ...common, classes, labelled, fitted, state: `stuck in ${tuning.phase}`, error, recomputed: recomputation(queries, before), seconds: { insert: insertSeconds, tuning: tuningSeconds } };
  }
  const after = await heldOutPrecision(api, queries, inserted);
  const report = { queries: tuning.held_out.queries, precisionAt5: tuning.held_out.precision_at_5 };
  const recomputed = recomputation(queries, before, after);
  const same = (a: number | null, b: number | null) => (a === null ? b === null : b !== null && Math.abs(a - b) < 1e-9);
  // A failed tuning measured nothing (its report is empty, as it should be): there is nothing to compare.
  const agree =
    tuning.state === 'done'
      ? report.queries === recomputed.queries && same(report.precisionAt5.before, recomputed.precisionAt5.before) && same(report.precisionAt5.after, recomputed.precisionAt5.after)
      : undefined;
  console.log(
    `${insertedLine}; tuning ${tuning.state} in ${tuningSeconds.toFixed(1)} s, fitted ${tuning.fitted}, precision@5 ${percentOf(report.precisionAt5.before)} -> ${percentOf(report.precisionAt5.after)}`,
  );
  if (agree === false) {
    console.error(`!!! ${model.label}, ${set.name}: the tuning's report (${JSON.stringify(report)}) and /search (${JSON.stringify(recomputed.precisionAt5)} on ${queries.length} queries) DISAGREE`);
  }
  return {
    ...common,
    classes: tuning.classes,
    labelled: tuning.labelled,
    fitted: tuning.fitted,
    state: tuning.state,
    applied: tuning.applied,
    error: tuning.error,
    report,
    recomputed,
    agree,
    seconds: { insert: insertSeconds, tuning: tuningSeconds },
  };
}

/**
 * The tuning once it is done or failed; or, still running, once it has been stuck (an error noted, no step since)
 * for TUNING_STUCK_MS, `stuck` set and the application untuned, which stops it.
 */
type Searched = { carried: number | null; truth: number | null };
/** heldOutPrecision's answers before and after (none: not tuned) as a run's `recomputed`. */
const recomputation = (queries: LabelledImage[], before: Searched, after: Searched = { carried: null, truth: null }): TuningRun['recomputed'] => ({
  queries: queries.length,
  precisionAt5: { before: before.carried, after: after.carried },
  byTrueLabel: { before: before.truth, after: after.truth },
});

async function waitForTuning(admin: { baseUrl: string; token: string }, appId: string): Promise<TuningAnswer & { stuck: boolean }> {
  const deadline = Date.now() + TUNING_TIMEOUT_MS;
  let since = { updatedAt: '', at: Date.now() };
  for (;;) {
    const { status, body } = await adminRequest<TuningAnswer>(admin, 'GET', `/admin/apps/${appId}/tune`);
    if (status !== 200) throw new Error(`GET /admin/apps/${appId}/tune: HTTP ${status} ${JSON.stringify(body)}`);
    if (body.tuning.state !== 'running') return { ...body, stuck: false };
    if (body.tuning.updated_at !== since.updatedAt) since = { updatedAt: body.tuning.updated_at, at: Date.now() };
    if (body.tuning.error !== null && Date.now() - since.at > TUNING_STUCK_MS) {
      const untuned = await adminRequest(admin, 'DELETE', `/admin/apps/${appId}/tune`);
      if (untuned.status !== 200) throw new Error(`DELETE /admin/apps/${appId}/tune: HTTP ${untuned.status} ${JSON.stringify(untuned.body)}`);
      return { ...body, stuck: true };
    }
    if (Date.now() > deadline) throw new Error(`the tuning of ${appId} is still running after ${TUNING_TIMEOUT_MS / 1000} s: ${JSON.stringify(body.tuning)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Each query searched with `/search?im_name=...&limit=5`: the share of the results that carry the query's label
 * (what the tuning's report counts: an unlabelled result is a miss), and the share of its true class.
 */
async function heldOutPrecision(api: Api, queries: LabelledImage[], images: LabelledImage[]): Promise<Searched> {
  const byName = new Map(images.map((image) => [image.name, image]));
  let carried = 0;
  let truth = 0;
  await forEachConcurrently(queries.values(), async (query) => {
    const { result = [] } = await api.call<Ranked>(`/search?im_name=${encodeURIComponent(query.name)}&limit=${TUNING_PRECISION_AT}`);
    const found = result.slice(0, TUNING_PRECISION_AT).flatMap((item) => byName.get(item.im_name) ?? []);
    carried += found.filter((image) => image.label !== undefined && image.label === query.label).length;
    truth += found.filter((image) => image.truth === query.truth).length;
  });
  const share = (hits: number) => (queries.length === 0 ? null : hits / (queries.length * TUNING_PRECISION_AT));
  return { carried: share(carried), truth: share(truth) };
}

function printTuning({ sets, labelsNeeded, disagreements }: TuningReport): void {
  const pair = (precision: Precision | undefined) => [percentOf(precision?.before ?? null), percentOf(precision?.after ?? null)];
  const agreement = (run: TuningRun) => (run.agree === undefined ? '-' : run.agree ? 'yes' : '**NO**');
  // The tuning's seconds from the POST to done, else why it was refused or failed.
  const outcome = (run: TuningRun) =>
    run.refused ?? (run.state === 'done' ? run.seconds.tuning!.toFixed(1) : `${run.state} (gave up after ${run.seconds.tuning!.toFixed(0)} s): ${run.error}`);
  printMarkdownTable(
    ['tuning (apply: always)', 'model', 'images', 'classes', 'fitted', 'held-out queries', 'report before %', 'report after %', 'recomputed before %', 'recomputed after %', 'agree', 'tuning s'],
    sets.map((run) => [
      run.set,
      run.modelLabel,
      String(run.images),
      String(run.classes ?? '-'),
      String(run.fitted ?? '-'),
      String(run.report?.queries ?? run.recomputed.queries),
      ...pair(run.report?.precisionAt5),
      ...pair(run.recomputed.precisionAt5),
      agreement(run),
      outcome(run),
    ]),
  );
  printMarkdownTable(
    ['labels per shape', 'model', 'fitted', 'held-out queries', 'report before %', 'report after %', 'recomputed before %', 'recomputed after %', 'agree', 'by true shape before %', 'by true shape after %', 'tuning s'],
    labelsNeeded.map((run) => [
      String(run.labelsPerShape),
      run.modelLabel,
      String(run.fitted ?? '-'),
      String(run.report?.queries ?? run.recomputed.queries),
      ...pair(run.report?.precisionAt5),
      ...pair(run.recomputed.precisionAt5),
      agreement(run),
      ...pair(run.recomputed.byTrueLabel),
      outcome(run),
    ]),
  );
  if (disagreements.length > 0) console.log(`\n**The tuning's report and /search disagree** on: ${disagreements.join('; ')}`);
}

const percentOf = (share: number | null): string => (share === null ? '-' : percent(share));

function countBy<T>(items: T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return counts;
}
