import { readdirSync, readFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { seededRandom } from '../inference/src/random.ts';
import { IMAGES_DIR, startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { createApplication, insertForm, waitForInsert, type AuthHeader, type InsertStatus } from './lib/api-client.ts';
import { quantile } from './lib/latency.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run load` (issue 9): a bounded load test on loopback. The local stack (as `npm start` runs it) is seeded with
 * images, then `--clients` clients call it back to back for `--seconds`, mixing inserts, searches by name, upload
 * searches and colour searches. Every answer must be 200 or the spec's "System busy" (429/503); afterwards every
 * accepted image must end searchable or listed as failed, each counted once. Prints a table, writes `.local/load.json`
 * and exits 1 on any other answer or any lost image.
 *
 *   npm run load -- [--clients 20] [--seconds 60] [--seed-images 20]
 */

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    'seed-images': { type: 'string', default: '20' },
  },
});
const OUT = path.join(ROOT, '.local/load.json');
const STATE_DIR = path.join(ROOT, '.wrangler/load-state');
const ADMIN_TOKEN = 'load-admin-token';
const BUSY = 'System busy, please try again later.';
const SEED = 9;

type Operation = 'insert' | 'search' | 'uploadsearch' | 'colorsearch';
/** Shares of the calls: mostly searches, as a catalog's traffic is. */
const MIX: [Operation, number][] = [
  ['search', 0.45],
  ['uploadsearch', 0.2],
  ['colorsearch', 0.15],
  ['insert', 0.2],
];
type Outcome = 'ok' | 'busy' | 'error';
type Sample = { operation: Operation; outcome: Outcome; ms: number; detail?: string };

const files = readdirSync(IMAGES_DIR)
  .filter((file) => /\.(jpe?g|png)$/i.test(file))
  .sort();

let stack: LocalStack | undefined;
process.on('SIGINT', () => {
  stack?.stop();
  process.exit(130);
});

async function main(): Promise<void> {
  const clients = Number(args.clients);
  const seconds = Number(args.seconds);
  rmSync(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR });
  const images = await startFixtureServer(imagesPort);
  const imageUrl = (file: string): string => `http://127.0.0.1:${imagesPort}/images/${file}`;
  try {
    const auth = await createApplication({ baseUrl: stack.baseUrl, token: ADMIN_TOKEN }, 'load');
    const seeded = files.slice(0, Number(args['seed-images']));
    console.log(`Seeding ${seeded.length} images...`);
    const seedTrans = await insert(stack.baseUrl, auth, seeded.map((file) => ({ name: `seed-${file}`, url: imageUrl(file) })));
    await waitForInsert(stack.baseUrl, auth, seedTrans, { pollMs: 500, timeoutMs: 600_000 });
    const uploads = seeded.map((file) => readFileSync(path.join(IMAGES_DIR, file)));

    console.log(`Load: ${clients} clients for ${seconds} s...`);
    const samples: Sample[] = [];
    const accepted: { transId: number; names: string[] }[] = [];
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async (_, client) => {
        const random = seededRandom(SEED + client);
        const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
        for (let call = 0; performance.now() < deadline; call++) {
          const operation = chooseOperation(random());
          const at = performance.now();
          let response: Response | undefined;
          let names: string[] = [];
          try {
            if (operation === 'insert') {
              names = Array.from({ length: 1 + Math.floor(random() * 3) }, (__, k) => `load-${client}-${call}-${k}`);
              const body = insertForm(names.map((name) => ({ name, url: imageUrl(pick(files)) })));
              response = await fetch(`${stack!.baseUrl}/insert`, { method: 'POST', headers: auth, body });
            } else if (operation === 'search') {
              response = await fetch(`${stack!.baseUrl}/search?im_name=seed-${encodeURIComponent(pick(seeded))}`, { headers: auth });
            } else if (operation === 'uploadsearch') {
              const form = new FormData();
              form.set('image', new Blob([pick(uploads)]), 'query.jpg');
              response = await fetch(`${stack!.baseUrl}/uploadsearch`, { method: 'POST', headers: auth, body: form });
            } else {
              const color = Math.floor(random() * 0xffffff).toString(16).padStart(6, '0');
              response = await fetch(`${stack!.baseUrl}/colorsearch?color=${color}`, { headers: auth });
            }
            const body = (await response.json()) as { status?: string; error?: unknown[]; trans_id?: number };
            const ms = performance.now() - at;
            if (response.status === 200) {
              samples.push({ operation, outcome: 'ok', ms });
              if (operation === 'insert') accepted.push({ transId: body.trans_id!, names });
            } else if ((response.status === 429 || response.status === 503) && JSON.stringify(body.error).includes(BUSY)) {
              samples.push({ operation, outcome: 'busy', ms });
            } else {
              samples.push({ operation, outcome: 'error', ms, detail: `${response.status} ${JSON.stringify(body).slice(0, 300)}` });
            }
          } catch (error) {
            samples.push({ operation, outcome: 'error', ms: performance.now() - at, detail: String(error) });
          }
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;

    console.log(`Waiting for ${accepted.length} insert transactions to finish...`);
    const settled = await Promise.all(accepted.map(({ transId }) => waitForInsert(stack!.baseUrl, auth, transId, { pollMs: 1000, timeoutMs: 600_000 })));
    const lost = await lostImages(stack.baseUrl, auth, accepted, settled);
    const report = summarize(samples, elapsed, clients, accepted, settled, lost);
    mkdirSync(path.dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);
    printReport(report);
    console.log(`\nWritten to ${path.relative(ROOT, OUT)}`);
    if (report.errors.length > 0 || lost.length > 0) process.exitCode = 1;
  } finally {
    images.closeAllConnections();
    images.close();
    stack.stop();
  }
}

function chooseOperation(draw: number): Operation {
  let sum = 0;
  for (const [operation, share] of MIX) if (draw < (sum += share)) return operation;
  return MIX.at(-1)![0];
}

async function insert(baseUrl: string, auth: AuthHeader, images: { name: string; url: string }[]): Promise<number> {
  const response = await fetch(`${baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm(images) });
  const body = (await response.json()) as { status: string; trans_id: number };
  if (body.status !== 'OK') throw new Error(`insert answered ${JSON.stringify(body)}`);
  return body.trans_id;
}

/**
 * Images accepted and neither listed as failed nor findable by name: lost. Also counts a transaction whose
 * successes and failures do not add up to its total (an image counted twice or never).
 */
async function lostImages(baseUrl: string, auth: AuthHeader, accepted: { transId: number; names: string[] }[], settled: InsertStatus[]): Promise<string[]> {
  const lost: string[] = [];
  for (const [i, { transId, names }] of accepted.entries()) {
    const status = settled[i]!;
    if (status.success_count + status.fail_count !== status.total || status.total !== names.length) lost.push(`transaction ${transId}: ${JSON.stringify(status)}`);
    const failed = new Set(status.error_list.map((error) => error.im_name));
    for (const name of names.filter((candidate) => !failed.has(candidate))) {
      const response = await fetch(`${baseUrl}/search?im_name=${name}`, { headers: auth });
      if (response.status !== 200) lost.push(`${name}: /search answered ${response.status}`);
    }
  }
  return lost;
}

type Row = { operation: string; calls: number; ok: number; busy: number; errors: number; perSecond: number; p50: number; p95: number };

function row(operation: string, samples: Sample[], seconds: number): Row {
  const ok = samples.filter((sample) => sample.outcome === 'ok');
  const ms = ok.map((sample) => sample.ms).sort((a, b) => a - b);
  return {
    operation,
    calls: samples.length,
    ok: ok.length,
    busy: samples.filter((sample) => sample.outcome === 'busy').length,
    errors: samples.filter((sample) => sample.outcome === 'error').length,
    perSecond: ok.length / seconds,
    p50: quantile(ms, 0.5),
    p95: quantile(ms, 0.95),
  };
}

function summarize(samples: Sample[], seconds: number, clients: number, accepted: { names: string[] }[], settled: InsertStatus[], lost: string[]) {
  return {
    clients,
    seconds,
    rows: [...MIX.map(([operation]) => row(operation, samples.filter((sample) => sample.operation === operation), seconds)), row('all', samples, seconds)],
    inserted: {
      images: accepted.reduce((sum, { names }) => sum + names.length, 0),
      succeeded: settled.reduce((sum, status) => sum + status.success_count, 0),
      failed: settled.flatMap((status) => status.error_list),
    },
    lost,
    errors: samples.filter((sample) => sample.outcome === 'error').map(({ operation, detail }) => ({ operation, detail })),
  };
}

function printReport(report: ReturnType<typeof summarize>): void {
  console.log(`\n${report.clients} clients, ${report.seconds.toFixed(0)} s on loopback\n`);
  console.log('| calls | count | ok | busy | errors | ok/s | p50 | p95 |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of report.rows) {
    console.log(`| ${r.operation} | ${r.calls} | ${r.ok} | ${r.busy} | ${r.errors} | ${r.perSecond.toFixed(1)} | ${r.p50.toFixed(0)} ms | ${r.p95.toFixed(0)} ms |`);
  }
  const { images, succeeded, failed } = report.inserted;
  console.log(`\nInserted during the run: ${images} images, ${succeeded} searchable, ${failed.length} failed, ${report.lost.length} lost.`);
  for (const line of report.lost.slice(0, 10)) console.log(`  lost: ${line}`);
  for (const error of report.errors.slice(0, 10)) console.log(`  error: ${error.operation}: ${error.detail}`);
}

await main();
