import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pMap from 'p-map';
import sharp from 'sharp';
import { seededRandom } from '../inference/src/random.ts';
import { IMAGES_DIR, startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import type { Field } from './lib/admin-client.ts';
import { createApplication, insertForm, waitForInsert, type AuthHeader, type InsertStatus } from './lib/api-client.ts';
import { commandLogFile, openCommandLog } from './lib/command-log.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { processKind, sampleMemory } from './lib/process-usage.ts';
import { endpointRows, summarizeWrites, WRITE_KINDS, type Answer, type Outcome, type Write, type WriteKind, type WriteTimes } from './lib/soak-report.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run soak` (issue 46): minutes of steady mixed traffic on the local stack (as `npm start` runs it, its state in
 * `.wrangler/soak-state`, its output in `.local/logs/soak.log`), to show whether writes keep up and memory stays flat.
 * A catalog of 60 test images (img-0 .. img-59, with brand, category and price) is inserted and waited for; then for
 * `--minutes`:
 * - `--clients` clients call back to back, each call drawn by weight: 60 % `/search` by an im_name with an `fq`
 *   filter and facets, 10 % `/colorsearch`, 10 % `/uploadsearch` by the `im_id` of an earlier upload search (no
 *   upload, no inference), 15 % metadata-only updates (`/insert` of `im_name` and `price` alone, on img-30 .. img-59)
 *   and 5 % `/textsearch`, when the application's embedding model reads text (probed first; otherwise its share goes
 *   to the others, and the report says what the service answered);
 * - apart from them, `--images-per-second` image re-inserts, each a `/remove` then an `/insert` by URL of one of
 *   img-0 .. img-29 (never the updated ones, so that searches by name always find theirs), round robin; a name whose
 *   last re-insert is still pending gets the insert alone (a remove would fail that one, 111), counted.
 * Every accepted write's transaction is polled (`/insert/status`, every second) until 100 %; its time to 100 % is the
 * transaction's own `update_time` less its `start_time` (the service's clock, to the millisecond: the polling's
 * spacing does not enter it). Once the traffic stops, writes get `--grace-seconds` more to finish.
 * Reports (a table, and `.local/soak.json`): per kind of write the p50 / p95 time to 100 % overall and by the minute
 * the writes were accepted in (with the slope of the per-minute p50s: growth), writes failed and unfinished, the
 * requests answered per endpoint with their outcomes, and the peak RSS of workerd and of the inference service each
 * minute (lib/process-usage.ts).
 * Exits 1 on any 5xx or request without an answer, any answer neither OK nor the spec's "System busy" (the traffic
 * is all valid), any write its transaction lists as failed, and any write still short of 100 % at the end of the
 * grace: from outside a lost write and one that never drains look alike, and a soak's load must drain within a
 * quiet minute. A longer `--grace-seconds` tells a slow drain from a loss.
 *
 *   npm run soak -- [--minutes 4] [--images-per-second 1] [--clients 4] [--grace-seconds 60]
 */

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '4' },
    'images-per-second': { type: 'string', default: '1' },
    clients: { type: 'string', default: '4' },
    'grace-seconds': { type: 'string', default: '60' },
  },
});
const OUT = path.join(ROOT, '.local/soak.json');
const STATE_DIR = path.join(ROOT, '.wrangler/soak-state');
const ADMIN_TOKEN = 'soak-admin-token';
const BUSY = 'System busy, please try again later.';
const SEED = 46;
const CATALOG_SIZE = 60;
/** img-0 .. img-29 are re-inserted, img-30 .. img-59 have their metadata updated. */
const REINSERTED = 30;
const POLL_MS = 1000;
/** Status polls in flight at once. */
const POLL_CONCURRENCY = 4;
/** Upload searches made before the traffic, whose im_ids the clients search by. */
const QUERY_IMAGES = 3;
const BRANDS = ['acme', 'globex', 'initech', 'umbrella'] as const;
const SCHEMA: Field[] = [
  { name: 'brand', type: 'string', searchable: true },
  { name: 'category', type: 'string', searchable: true },
  { name: 'price', type: 'float', searchable: true },
];
const TEXT_QUERIES = ['a red flower', 'a bird', 'green leaves', 'a wooden chair', 'a yellow car'] as const;

type Operation = 'search' | 'colorsearch' | 'uploadsearch' | 'update' | 'textsearch';
/** Issue 46's mix for the clients. */
const MIX: [Operation, number][] = [
  ['search', 0.6],
  ['colorsearch', 0.1],
  ['uploadsearch', 0.1],
  ['update', 0.15],
  ['textsearch', 0.05],
];

const minutes = Number(args.minutes);
const imagesPerSecond = Number(args['images-per-second']);
const clients = Number(args.clients);
const graceSeconds = Number(args['grace-seconds']);
if (!(minutes > 0)) throw new Error(`--minutes: a positive number, got ${args.minutes}`);
if (!(imagesPerSecond >= 0)) throw new Error(`--images-per-second: 0 or more, got ${args['images-per-second']}`);
if (!Number.isInteger(clients) || clients < 0) throw new Error(`--clients: a whole number, got ${args.clients}`);
if (!(graceSeconds >= 0)) throw new Error(`--grace-seconds: 0 or more, got ${args['grace-seconds']}`);

const log = openCommandLog(commandLogFile('soak'));
let stack: LocalStack | undefined;
let stopping = false;

function stopAll(code: number): never {
  stopping = true;
  stack?.stop();
  process.exit(code);
}
process.on('SIGINT', () => stopAll(130));
process.on('SIGTERM', () => stopAll(143));

/** Says what went wrong with the log's last lines, then stops. */
function fail(message: string): never {
  console.error(log.failure(message));
  return stopAll(1);
}

type Body = { status?: string; trans_id?: number; im_id?: string; error?: unknown; result?: InsertStatus[] };
type Called = { answer: Answer; body?: Body };

/** One request, timed and classified (soak-report.ts, Outcome). */
async function call(endpoint: string, url: string, init: RequestInit): Promise<Called> {
  const started = performance.now();
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, init);
    text = await response.text();
  } catch (error) {
    return { answer: { endpoint, outcome: 'error', ms: performance.now() - started, detail: String(error) } };
  }
  const ms = performance.now() - started;
  let body: Body | undefined;
  try {
    body = JSON.parse(text) as Body;
  } catch {
    body = undefined; // a crash page, not the API's JSON
  }
  const outcome: Outcome =
    (response.status === 429 || response.status === 503) && text.includes(BUSY)
      ? 'busy'
      : response.status >= 500
        ? '5xx'
        : body?.status === 'OK'
          ? 'ok'
          : 'non-ok';
  const detail = outcome === 'ok' || outcome === 'busy' ? undefined : `HTTP ${response.status} ${text.slice(0, 300)}`;
  return { answer: { endpoint, outcome, ms, ...(detail && { detail }) }, body };
}

type CatalogImage = { name: string; file: string; metadata: Record<string, string> };

/** The first CATALOG_SIZE valid test images (at least 100 px on a side, spec 2.1), named img-0 .. img-59. */
async function catalog(): Promise<CatalogImage[]> {
  const files = readdirSync(IMAGES_DIR)
    .filter((file) => /\.(jpe?g|png)$/i.test(file))
    .sort();
  const valid: string[] = [];
  for (const file of files) {
    const { width = 0, height = 0 } = await sharp(path.join(IMAGES_DIR, file)).metadata();
    if (width >= 100 || height >= 100) valid.push(file);
    if (valid.length === CATALOG_SIZE) break;
  }
  if (valid.length < CATALOG_SIZE) throw new Error(`${IMAGES_DIR} has ${valid.length} valid images, the soak needs ${CATALOG_SIZE}`);
  return valid.map((file, i) => ({
    name: `img-${i}`,
    file,
    metadata: { brand: BRANDS[i % BRANDS.length]!, category: file.split('_')[0]!, price: (10 + i * 1.5).toFixed(2) },
  }));
}

/** The transaction's own time to 100 %: its last update less its start (`2015-01-02T03:04:05.678+0000`), in ms. */
function serverMs(status: InsertStatus & { start_time?: string; update_time?: string }): number | undefined {
  const parse = (stamp: string | undefined): number => (stamp ? Date.parse(stamp.replace(/([+-]\d\d)(\d\d)$/, '$1:$2')) : NaN);
  const ms = parse(status.update_time) - parse(status.start_time);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

function chooseOperation(draw: number, mix: [Operation, number][]): Operation {
  const total = mix.reduce((sum, [, share]) => sum + share, 0);
  let sum = 0;
  for (const [operation, share] of mix) if (draw * total < (sum += share)) return operation;
  return mix.at(-1)![0];
}

async function main(): Promise<void> {
  const started = performance.now();
  const images = await catalog();
  rmSync(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  console.log(`Soak: the local stack's output goes to ${log.shown}`);
  stack = await startLocalStack({
    port,
    inferencePort,
    adminToken: ADMIN_TOKEN,
    persistTo: STATE_DIR,
    log: log.fd,
    onExit: (code) => stopping || fail(`wrangler stopped (exit code ${code}).`),
  });
  const fixtures = await startFixtureServer(imagesPort);
  // Each download of a test image, in the log: a write failed with 201 (download) is traced there.
  fixtures.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const at = performance.now();
    response.on('close', () => {
      const end = response.writableFinished ? '' : ', closed before its end';
      writeSync(log.fd, `[fixtures] ${request.method} ${request.url} ${response.statusCode}${end} in ${Math.round(performance.now() - at)} ms (socket from port ${request.socket.remotePort})\n`);
    });
  });
  fixtures.on('clientError', (error: Error) => writeSync(log.fd, `[fixtures] client error: ${error.message}\n`));
  try {
    await soak(stack, images, `http://127.0.0.1:${imagesPort}/images`, started);
  } finally {
    fixtures.closeAllConnections();
    fixtures.close();
    stopping = true;
    stack.stop();
    await Promise.all(stack.children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined)));
  }
}

async function soak(local: LocalStack, images: CatalogImage[], imagesUrl: string, started: number): Promise<void> {
  const { baseUrl } = local;
  const auth: AuthHeader = await createApplication({ baseUrl, token: ADMIN_TOKEN }, 'soak', undefined, SCHEMA);
  const urlOf = (image: CatalogImage): string => `${imagesUrl}/${image.file}`;

  console.log(`Seeding ${images.length} images (img-0 .. img-${images.length - 1})...`);
  const seeded = await call('/insert', `${baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm(images.map((image) => ({ name: image.name, url: urlOf(image), metadata: image.metadata }))) });
  if (seeded.answer.outcome !== 'ok') throw new Error(`the catalog's /insert answered ${seeded.answer.detail}`);
  const seedStatus = await waitForInsert(baseUrl, auth, seeded.body!.trans_id!, { pollMs: 500, timeoutMs: 10 * 60_000 });
  if (seedStatus.success_count !== images.length) throw new Error(`the catalog's insert stored ${seedStatus.success_count} of ${images.length}: ${JSON.stringify(seedStatus.error_list)}`);

  // Query images for /uploadsearch by im_id: uploaded once, searched again by id.
  const queryIds: string[] = [];
  for (const image of images.slice(REINSERTED, REINSERTED + QUERY_IMAGES)) {
    const form = new FormData();
    form.set('image', new Blob([readFileSync(path.join(IMAGES_DIR, image.file))]), image.file);
    const uploaded = await call('/uploadsearch', `${baseUrl}/uploadsearch`, { method: 'POST', headers: auth, body: form });
    if (uploaded.answer.outcome !== 'ok' || !uploaded.body?.im_id) throw new Error(`/uploadsearch of ${image.file} answered ${uploaded.answer.detail ?? 'no im_id'}`);
    queryIds.push(uploaded.body.im_id);
  }
  // /textsearch when the application's model reads text; otherwise what the service answers, reported.
  const probe = await call('/textsearch', `${baseUrl}/textsearch?q=${encodeURIComponent(TEXT_QUERIES[0])}`, { headers: auth });
  const textsearch = probe.answer.outcome === 'ok' ? 'in the mix' : `left out: the service answered ${JSON.stringify((probe.body?.error as unknown[] | undefined)?.[0] ?? probe.answer.detail)}`;
  const mix = MIX.filter(([operation]) => operation !== 'textsearch' || probe.answer.outcome === 'ok');

  const answers: Answer[] = [];
  const writes: (Write & { observedMs?: number })[] = [];
  /** Writes not at 100 % yet, by transaction; `settled` frees a re-inserted name. */
  const pending = new Map<number, { write: Write & { observedMs?: number }; acceptedAt: number; settled?: () => void }>();
  const reinserts = { sent: 0, overPending: 0 };

  const memoryRows: { label: string; workerMiB: number | null; inferenceMiB: number | null }[] = [];
  let sampler = sampleMemory(process.pid, processKind);
  const closeMemoryRow = (label: string): void => {
    const peaks = sampler.stop();
    memoryRows.push({ label, workerMiB: peaks.worker?.peakRssMiB ?? null, inferenceMiB: peaks.inference?.peakRssMiB ?? null });
    sampler = sampleMemory(process.pid, processKind);
  };
  closeMemoryRow('seeded');

  const trafficMs = minutes * 60_000;
  console.log(
    `Traffic for ${minutes} min: ${clients} clients back to back, ${imagesPerSecond} image re-insert${imagesPerSecond === 1 ? '' : 's'} a second; /textsearch ${textsearch}...`,
  );
  const t0 = performance.now();
  const deadline = t0 + trafficMs;
  let trafficDone = false;
  let graceDeadline = Infinity;

  const accept = (kind: WriteKind, called: Called, settled?: () => void): boolean => {
    const transId = called.body?.trans_id;
    if (called.answer.outcome !== 'ok' || transId === undefined) return false;
    const write = { kind, transId, acceptedMs: performance.now() - t0 };
    writes.push(write);
    pending.set(transId, { write, acceptedAt: performance.now(), ...(settled && { settled }) });
    return true;
  };

  const client = async (index: number): Promise<void> => {
    const random = seededRandom(SEED + index);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const updated = images.slice(REINSERTED);
    while (performance.now() < deadline) {
      const operation = chooseOperation(random(), mix);
      if (operation === 'search') {
        const [first, second] = [pick(BRANDS), pick(BRANDS)];
        const query = new URLSearchParams({ im_name: pick(updated).name, fq: `brand:${first} OR ${second}`, facets: 'brand,category,price', facets_limit: '5' });
        answers.push((await call('/search', `${baseUrl}/search?${query}`, { headers: auth })).answer);
      } else if (operation === 'colorsearch') {
        const color = Math.floor(random() * 0xffffff).toString(16).padStart(6, '0');
        answers.push((await call('/colorsearch', `${baseUrl}/colorsearch?color=${color}`, { headers: auth })).answer);
      } else if (operation === 'uploadsearch') {
        answers.push((await call('/uploadsearch by im_id', `${baseUrl}/uploadsearch?im_id=${encodeURIComponent(pick(queryIds))}`, { headers: auth })).answer);
      } else if (operation === 'textsearch') {
        answers.push((await call('/textsearch', `${baseUrl}/textsearch?q=${encodeURIComponent(pick(TEXT_QUERIES))}`, { headers: auth })).answer);
      } else {
        const form = new URLSearchParams({ 'im_name[0]': pick(updated).name, 'price[0]': (random() * 100).toFixed(2) });
        const called = await call('/insert (metadata)', `${baseUrl}/insert`, { method: 'POST', headers: auth, body: form });
        answers.push(called.answer);
        accept('metadata', called);
      }
    }
  };

  let cursor = 0;
  const reinserted = images.slice(0, REINSERTED);
  /** Re-inserts not at 100 % yet, by name. */
  const pendingByName = new Map<string, number>();
  const reinsert = async (image: CatalogImage): Promise<void> => {
    const pendingBefore = pendingByName.get(image.name) ?? 0;
    pendingByName.set(image.name, pendingBefore + 1);
    const free = (): void => void pendingByName.set(image.name, pendingByName.get(image.name)! - 1);
    // A remove would fail the name's insert still pending (111, removed before it was processed): then the new
    // insert alone replaces it, as a later version, and both are waited for.
    if (pendingBefore > 0) reinserts.overPending++;
    else {
      const removed = await call('/remove', `${baseUrl}/remove`, { method: 'POST', headers: auth, body: new URLSearchParams({ 'im_name[0]': image.name }) });
      answers.push(removed.answer);
      if (removed.answer.outcome !== 'ok') return free();
    }
    const inserted = await call('/insert (image)', `${baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm([{ name: image.name, url: urlOf(image), metadata: image.metadata }]) });
    answers.push(inserted.answer);
    if (!accept('image', inserted, free)) free();
  };
  const reinserting = (async () => {
    const inFlight: Promise<void>[] = [];
    if (imagesPerSecond <= 0) return;
    for (let tick = 0; ; tick++) {
      const at = t0 + (tick * 1000) / imagesPerSecond;
      if (at >= deadline) break;
      await sleep(at - performance.now());
      reinserts.sent++;
      const image = reinserted[cursor]!;
      cursor = (cursor + 1) % reinserted.length;
      inFlight.push(reinsert(image));
    }
    await Promise.all(inFlight);
  })();

  const pollOne = async (transId: number): Promise<void> => {
    const entry = pending.get(transId)!;
    const called = await call('/insert/status', `${baseUrl}/insert/status/${transId}`, { headers: auth });
    answers.push(called.answer);
    const [status] = called.body?.result ?? [];
    if (status?.processed_percent !== 100) return;
    const observedMs = performance.now() - entry.acceptedAt;
    entry.write.observedMs = observedMs;
    entry.write.doneMs = serverMs(status) ?? observedMs;
    if (status.fail_count > 0) entry.write.failure = JSON.stringify(status.error_list[0] ?? `${status.fail_count} failed`);
    pending.delete(transId);
    entry.settled?.();
  };
  const polling = (async () => {
    while (!(trafficDone && (pending.size === 0 || performance.now() > graceDeadline))) {
      const next = performance.now() + POLL_MS;
      await pMap([...pending.keys()], pollOne, { concurrency: POLL_CONCURRENCY });
      await sleep(next - performance.now());
    }
  })();

  const minuteCount = Math.max(1, Math.ceil(minutes));
  const memoryClock = (async () => {
    for (let minute = 1; minute <= minuteCount; minute++) {
      await sleep(Math.min(t0 + minute * 60_000, deadline) - performance.now());
      closeMemoryRow(String(minute));
    }
  })();

  await Promise.all([...Array.from({ length: clients }, (_, index) => client(index)), reinserting, memoryClock]);
  const trafficSeconds = (performance.now() - t0) / 1000;
  trafficDone = true;
  graceDeadline = performance.now() + graceSeconds * 1000;
  if (pending.size > 0) console.log(`Traffic stopped; waiting up to ${graceSeconds} s for ${pending.size} writes to reach 100 %...`);
  const graceStarted = performance.now();
  await polling;
  const drainSeconds = (performance.now() - graceStarted) / 1000;
  closeMemoryRow(`after (${drainSeconds.toFixed(0)} s)`);
  sampler.stop();

  const summary = summarizeWrites(writes, minutes);
  const endpoints = endpointRows(answers);
  const problems = answers.filter(({ outcome }) => outcome !== 'ok' && outcome !== 'busy');
  const failedWrites = writes.filter((write) => write.doneMs !== undefined && write.failure !== undefined);
  const unfinished = writes.filter((write) => write.doneMs === undefined);
  const failures = [
    ...(problems.some(({ outcome }) => outcome === '5xx' || outcome === 'error') ? [`${problems.filter(({ outcome }) => outcome === '5xx' || outcome === 'error').length} answers 5xx or none`] : []),
    ...(problems.some(({ outcome }) => outcome === 'non-ok') ? [`${problems.filter(({ outcome }) => outcome === 'non-ok').length} answers neither OK nor busy`] : []),
    ...(failedWrites.length ? [`${failedWrites.length} writes failed`] : []),
    ...(unfinished.length ? [`${unfinished.length} writes short of 100 % ${graceSeconds} s after the traffic stopped`] : []),
  ];
  const report = {
    date: new Date().toISOString(),
    args: { minutes, imagesPerSecond, clients, graceSeconds },
    embedModel: local.defaultEmbedModel,
    catalog: images.map(({ name, file }) => ({ name, file })),
    textsearch,
    trafficSeconds,
    drainSeconds,
    reinserts,
    writes: summary,
    endpoints,
    memory: memoryRows,
    problems: problems.slice(0, 50),
    failedWrites: failedWrites.slice(0, 50),
    unfinished: unfinished.map(({ kind, transId, acceptedMs }) => ({ kind, transId, acceptedMs })),
    /** The clock check: how far the poll-observed times (late by up to a poll cycle) stand above the service's. */
    observedOverServerMs: observedOverServer(writes),
    failures,
    seconds: (performance.now() - started) / 1000,
  };
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);
  printReport(report);
  console.log(`\nJSON: ${path.relative(ROOT, OUT)}; the local stack's output: ${log.shown}`);
  if (failures.length > 0) process.exitCode = 1;
}

/** The median of (poll-observed − service) time to 100 % over the finished writes: a cross-check of the two clocks. */
function observedOverServer(writes: (Write & { observedMs?: number })[]): number | null {
  const gaps = writes.flatMap(({ doneMs, observedMs }) => (doneMs === undefined || observedMs === undefined ? [] : [observedMs - doneMs])).sort((a, b) => a - b);
  return gaps.length ? Math.round(gaps[gaps.length >> 1]!) : null;
}

const seconds = (ms: number | null): string => (ms === null ? '-' : `${(ms / 1000).toFixed(2)} s`);
const times = (t: WriteTimes): string => (t.accepted === 0 ? '-' : `${t.accepted}: ${seconds(t.p50)} / ${seconds(t.p95)}${t.finished < t.accepted ? ` (${t.accepted - t.finished} unfinished)` : ''}`);
const mib = (value: number | null): string => (value === null ? '-' : `${value} MiB`);
const KIND_LABEL: Record<WriteKind, string> = { metadata: 'metadata update', image: 'image re-insert' };

function printReport(report: {
  args: { minutes: number; imagesPerSecond: number; clients: number; graceSeconds: number };
  embedModel: string;
  trafficSeconds: number;
  reinserts: { sent: number; overPending: number };
  writes: ReturnType<typeof summarizeWrites>;
  endpoints: ReturnType<typeof endpointRows>;
  memory: { label: string; workerMiB: number | null; inferenceMiB: number | null }[];
  problems: Answer[];
  failedWrites: Write[];
  failures: string[];
}): void {
  const { args: run, writes } = report;
  console.log(
    `\n${run.clients} clients, ${run.imagesPerSecond} image re-insert${run.imagesPerSecond === 1 ? '' : 's'} a second (${report.reinserts.sent} sent` +
      `${report.reinserts.overPending ? `, ${report.reinserts.overPending} over a pending insert of the name, without a remove` : ''}), ${report.trafficSeconds.toFixed(0)} s; model ${report.embedModel}`,
  );
  console.log('\n| minute | metadata updates: accepted: p50 / p95 to 100 % | image re-inserts: accepted: p50 / p95 | workerd peak RSS | inference peak RSS |');
  console.log('| --- | --- | --- | --- | --- |');
  const memoryOf = (label: string) => report.memory.find((row) => row.label === label);
  const seeded = memoryOf('seeded');
  console.log(`| before (seeded) | | | ${mib(seeded?.workerMiB ?? null)} | ${mib(seeded?.inferenceMiB ?? null)} |`);
  for (const { minute, byKind } of writes.perMinute) {
    const memory = memoryOf(String(minute));
    console.log(`| ${minute} | ${times(byKind.metadata)} | ${times(byKind.image)} | ${mib(memory?.workerMiB ?? null)} | ${mib(memory?.inferenceMiB ?? null)} |`);
  }
  const after = report.memory.at(-1);
  if (after?.label.startsWith('after')) console.log(`| ${after.label} | | | ${mib(after.workerMiB)} | ${mib(after.inferenceMiB)} |`);

  console.log('\n| write | accepted | at 100 % | failed | unfinished | p50 / p95 to 100 % | p50 growth a minute |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const kind of WRITE_KINDS) {
    const k = writes.byKind[kind];
    const growth = k.p50GrowthPerMinute === null ? '-' : `${k.p50GrowthPerMinute >= 0 ? '+' : ''}${(k.p50GrowthPerMinute / 1000).toFixed(2)} s`;
    console.log(`| ${KIND_LABEL[kind]} | ${k.accepted} | ${k.finished} | ${k.failed} | ${k.unfinished} | ${seconds(k.p50)} / ${seconds(k.p95)} | ${growth} |`);
  }

  console.log('\n| endpoint | requests | OK | busy | other non-OK | 5xx | no answer | OK a second | p50 / p95 |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const row of report.endpoints) {
    console.log(
      `| ${row.endpoint} | ${row.requests} | ${row.ok} | ${row.busy} | ${row['non-ok']} | ${row['5xx']} | ${row.error} | ${(row.ok / report.trafficSeconds).toFixed(1)} | ${row.latency.p50.toFixed(0)} / ${row.latency.p95.toFixed(0)} ms |`,
    );
  }
  for (const problem of report.problems.slice(0, 5)) console.log(`  ${problem.outcome}: ${problem.endpoint}: ${problem.detail}`);
  for (const write of report.failedWrites.slice(0, 5)) console.log(`  failed write: ${write.kind} ${write.transId}: ${write.failure}`);
  console.log(report.failures.length ? `\nFAILED: ${report.failures.join('; ')}` : '\nOK: every answer OK or busy, every write at 100 % and stored');
}

main().catch((error: unknown) => fail(`npm run soak failed: ${error instanceof Error ? error.message : String(error)}`));
