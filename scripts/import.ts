import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseCsv } from 'csv-parse/sync';
import { imageNameOf, INSERT_BATCH, insertForm, type AuthHeader, type InsertStatus } from './lib/api-client.ts';
import { DATA_ERRORS } from '../src/http/messages.ts';
import { MIN_IMAGE_SIDE } from '../src/images/probe.ts';
import { apiUrlFromEnv, DEMO_KEYS, stackDir, type StackRecord } from './lib/stack-record.ts';
import { ROOT } from './lib/wrangler-env.ts';

const USAGE = `Usage: npm run import -- <folder | file.csv> [--serve-host 127.0.0.1]

  <folder>     every image file in it (jpg, png, gif, bmp, webp, pnm, sr/ras, tif), named after the file
  <file.csv>   a header row, then one image per row: im_name, im_url or file (a path from the CSV's folder),
               and any metadata fields as further columns

Local files are served to the service over HTTP from this machine (--serve-host, default 127.0.0.1: the local
stack of npm start). Run it again to resume: what is done is skipped, what was sent is followed to the end.

Environment: API_URL (default http://127.0.0.1:$PORT; PORT unset: the running npm start's, else 8787); ACCESS_KEY
and SECRET_KEY (default: the demo application npm start created).`;

const IMAGE_FILE = /\.(jpe?g|jpe|png|gif|bmp|dib|webp|pbm|pgm|ppm|pnm|sr|ras|tiff?)$/i;
/** Transactions followed at once: enough to keep the queue busy, few enough not to hit an application's pending limit. */
const MAX_OPEN = 5;
const POLL_MS = 1000;
const DOWNLOAD_FAILED = 201;

type Entry = { name: string; url?: string; file?: string; metadata: Record<string, string> };
type Failure = InsertStatus['error_list'][number];
/** What a run leaves for the next: every settled name, and the transactions sent but not yet followed to the end. */
type State = { servePort: number; done: Record<string, Failure | 'ok'>; open: { transId: number; names: string[] }[] };

const { values: options, positionals } = parseArgs({
  options: { 'serve-host': { type: 'string', default: '127.0.0.1' }, help: { type: 'boolean', default: false } },
  allowPositionals: true,
});

function readEntries(source: string): Entry[] {
  if (statSync(source).isDirectory()) {
    return readdirSync(source)
      .filter((file) => IMAGE_FILE.test(file))
      .sort()
      .map((file) => ({ name: imageNameOf(file), file: path.join(source, file), metadata: {} }));
  }
  const rows: Record<string, string>[] = parseCsv(readFileSync(source), {
    bom: true,
    columns: (header: string[]) => header.map((column) => column.trim()),
    skip_empty_lines: true,
    relax_column_count: true,
  });
  return rows.map((fields, line) => {
    const { im_name: name, im_url: url, file, ...metadata } = fields;
    if (!url && !file) throw new Error(`${source}, row ${line + 2}: give im_url or file`);
    const local = file ? path.resolve(path.dirname(source), file) : undefined;
    return { name: name || imageNameOf(local ?? url!), ...(url ? { url } : { file: local }), metadata };
  });
}

/** ACCESS_KEY and SECRET_KEY, else the demo application's of the running npm start (or the last one's). */
function credentials(record: StackRecord | undefined): AuthHeader {
  let { ACCESS_KEY: accessKey, SECRET_KEY: secretKey } = process.env;
  if (!accessKey || !secretKey) {
    const demo = record?.demo_keys ?? path.join(stackDir(), DEMO_KEYS);
    if (!existsSync(demo)) throw new Error('set ACCESS_KEY and SECRET_KEY (or run npm start once for its demo application)');
    ({ access_key: accessKey, secret_key: secretKey } = JSON.parse(readFileSync(demo, 'utf8')) as { access_key: string; secret_key: string });
  }
  return { authorization: `Basic ${Buffer.from(`${accessKey}:${secretKey}`).toString('base64')}` };
}

/** The local files of the import over HTTP, at `/files/<im_name>`, on the port the last run used if it is free. */
async function serveFiles(entries: Entry[], host: string, port: number): Promise<{ server: http.Server; urlOf(name: string): string }> {
  const files = new Map(entries.filter((entry) => entry.file).map((entry) => [entry.name, entry.file!]));
  const server = http.createServer((request, response) => {
    const file = files.get(decodeURIComponent((request.url ?? '').replace(/^\/files\//, '')));
    const size = file && existsSync(file) ? statSync(file).size : undefined;
    // A missing file fails its image with the service's download error (201), like a broken URL.
    if (!file || size === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    createReadStream(file).on('error', () => response.destroy()).pipe(response);
  });
  const listen = (at: number) =>
    new Promise<void>((resolve, reject) => server.once('error', reject).listen(at, host, () => resolve()));
  await listen(port).catch(() => listen(0));
  const bound = (server.address() as { port: number }).port;
  return { server, urlOf: (name) => `http://${host}:${bound}/files/${encodeURIComponent(name)}` };
}

class Progress {
  readonly #total: number;
  readonly #startedAt = performance.now();
  readonly #alreadyDone: number;
  #lastLine = 0;

  constructor(total: number, alreadyDone: number) {
    this.#total = total;
    this.#alreadyDone = alreadyDone;
  }

  show(done: number, failed: number, final = false): void {
    const now = performance.now();
    if (!final && !process.stdout.isTTY && now - this.#lastLine < 5000) return;
    this.#lastLine = now;
    const rate = (done - this.#alreadyDone) / Math.max(0.001, (now - this.#startedAt) / 1000);
    const left = this.#total - done;
    const eta = rate > 0 ? `${Math.floor(left / rate / 60)}m${String(Math.round(left / rate) % 60).padStart(2, '0')}s` : '--';
    const width = 30;
    const filled = Math.round((width * done) / Math.max(1, this.#total));
    const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${this.#total} ${rate.toFixed(1)} images/s ETA ${eta}, ${failed} failed`;
    if (process.stdout.isTTY) process.stdout.write(`\r${line}${final ? '\n' : ''}`);
    else console.log(line);
  }
}

/** What the API's message leaves unsaid (docs/api.md, Images and metadata). */
const hintOf = (failure: Failure): string =>
  failure.error_code === DATA_ERRORS.unsupportedDimension.code ? ` (at least ${MIN_IMAGE_SIDE} px on one side)` : '';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<number> {
  const source = positionals[0];
  if (options.help || !source || positionals.length > 1) {
    console.log(USAGE);
    return options.help ? 0 : 2;
  }
  const { url: baseUrl, from, record } = apiUrlFromEnv();
  console.log(`Using ${baseUrl} (${from})`);
  const auth = credentials(record);
  const entries = readEntries(path.resolve(source));
  const key = createHash('sha256').update(`${baseUrl}\n${auth.authorization}\n${path.resolve(source)}`).digest('hex').slice(0, 16);
  const stateFile = path.join(ROOT, '.local/import', `${key}.json`);
  const state: State = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : { servePort: 0, done: {}, open: [] };
  const save = (): void => {
    mkdirSync(path.dirname(stateFile), { recursive: true });
    writeFileSync(stateFile, JSON.stringify(state));
  };

  const { server, urlOf } = await serveFiles(entries, options['serve-host']!, state.servePort);
  state.servePort = (server.address() as { port: number }).port;
  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  const sent = new Set(state.open.flatMap((transaction) => transaction.names));
  // Local files whose download failed while an earlier run (and its file server) was gone are sent again, once.
  const inherited = new Set(state.open.map((transaction) => transaction.transId));
  const refetchable = (transId: number, failure: Failure | undefined): boolean =>
    inherited.has(transId) && failure?.error_code === DOWNLOAD_FAILED && byName.get(failure.im_name)?.file !== undefined;
  const queue = entries.filter((entry) => !(entry.name in state.done) && !sent.has(entry.name));
  const counts = () => {
    const outcomes = Object.values(state.done);
    return { done: outcomes.length, failed: outcomes.filter((outcome) => outcome !== 'ok').length };
  };
  const progress = new Progress(entries.length, counts().done);
  console.log(`${entries.length} images from ${source} to ${baseUrl}: ${counts().done} done before, ${sent.size} being processed, ${queue.length} to send`);

  try {
    while (queue.length > 0 || state.open.length > 0) {
      while (queue.length > 0 && state.open.length < MAX_OPEN) {
        const batch = queue.splice(0, INSERT_BATCH);
        const sentBatch = await send(baseUrl, auth, batch.map((entry) => ({ name: entry.name, url: entry.url ?? urlOf(entry.name), metadata: entry.metadata })));
        for (const failure of sentBatch.rejected) state.done[failure.im_name] = failure;
        if (sentBatch.transId !== undefined) state.open.push({ transId: sentBatch.transId, names: sentBatch.accepted });
        save();
      }
      for (const transaction of [...state.open]) {
        const status = await fetchStatus(baseUrl, auth, transaction.transId);
        if (status.processed_percent < 100) continue;
        const failures = await allFailures(baseUrl, auth, transaction.transId, status);
        const failed = new Map(failures.map((failure) => [failure.im_name, failure]));
        for (const name of transaction.names) {
          const failure = failed.get(name);
          if (refetchable(transaction.transId, failure)) queue.push(byName.get(name)!);
          else state.done[name] = failure ?? 'ok';
        }
        state.open = state.open.filter((open) => open !== transaction);
        save();
      }
      progress.show(counts().done, counts().failed);
      if (state.open.length > 0) await sleep(POLL_MS);
    }
  } finally {
    server.close();
  }
  const { done, failed } = counts();
  progress.show(done, failed, true);
  const failures = Object.values(state.done).filter((outcome): outcome is Failure => outcome !== 'ok');
  if (failures.length > 0) console.log('Failed:');
  for (const failure of failures) console.log(`  ${failure.im_name}: ${failure.error_code} ${failure.error_message}${hintOf(failure)}`);
  console.log(`${done - failed} images searchable, ${failed} failed.`);
  return 0;
}

/** One /insert call, retried while the service is busy; the names it accepted and those it refused with their errors. */
async function send(baseUrl: string, auth: AuthHeader, images: { name: string; url: string; metadata: Record<string, string> }[]) {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm(images) });
    const body = (await response.json()) as { trans_id?: number; error?: ({ index?: number; error_code: number; error_message: string } | string)[] };
    if ((response.status === 429 || response.status === 503) && attempt < 8) {
      await sleep(1000 * 2 ** Math.min(attempt, 5));
      continue;
    }
    const rejected: Failure[] = [];
    for (const error of body.error ?? []) {
      if (typeof error === 'object' && error.index !== undefined) rejected.push({ im_name: images[error.index]!.name, error_code: error.error_code, error_message: error.error_message });
    }
    if (body.trans_id === undefined && rejected.length === 0) throw new Error(`/insert answered ${response.status}: ${JSON.stringify(body)}`);
    const refused = new Set(rejected.map((failure) => failure.im_name));
    return { transId: body.trans_id, accepted: images.map((image) => image.name).filter((name) => !refused.has(name)), rejected };
  }
}

async function fetchStatus(baseUrl: string, auth: AuthHeader, transId: number, errorPage = 1): Promise<InsertStatus> {
  const response = await fetch(`${baseUrl}/insert/status/${transId}?error_limit=${INSERT_BATCH}&error_page=${errorPage}`, { headers: auth });
  const [status] = ((await response.json()) as { result?: InsertStatus[] }).result ?? [];
  if (!status) throw new Error(`/insert/status/${transId} answered ${response.status}`);
  return status;
}

async function allFailures(baseUrl: string, auth: AuthHeader, transId: number, first: InsertStatus): Promise<Failure[]> {
  const failures: Failure[] = [...first.error_list];
  for (let page = 2; failures.length < first.fail_count; page++) {
    const next = await fetchStatus(baseUrl, auth, transId, page);
    if (next.error_list.length === 0) break;
    failures.push(...next.error_list);
  }
  return failures;
}

process.exitCode = await main().catch((error: unknown) => {
  const unreachable = error instanceof TypeError && error.message === 'fetch failed';
  console.error(`import: ${error instanceof Error ? error.message : String(error)}${unreachable ? ' (is npm start running?)' : ''}`);
  return 1;
});
