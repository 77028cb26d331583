import { mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { predictForm } from '@edge-image-search/contract/wire';
import { IMAGES_DIR, startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import type { AdminConfig } from './lib/admin-client.ts';
import { createApplication, waitForInsert, type AuthHeader } from './lib/api-client.ts';
import { latencyOf } from './lib/latency.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { processKind, sampleMemory } from './lib/process-usage.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run measure:memory`: what hostile callers cost the local stack's memory. On a fresh local stack, each scenario
 * runs alone while the resident memory of workerd and of the inference service is sampled; the table gives each
 * one's peak above its level just before the scenario, and the answers' statuses:
 * - 10 concurrent 2 MB urlencoded bodies of `a&a&...` without credentials, to `/insert` (a data endpoint: Basic only)
 *   and to `/uploadsearch` (an app key may come in the body);
 * - 10 concurrent 45 MB multipart bodies straight to the inference service's `/predict`, with its secret;
 * - authenticated `/insert` bodies just under its 20 MB cap that carry no image: 19 MB of `a&a&...` (9.5 million empty
 *   parameters) once and 4 at once, and 150,000 tiny multipart parts; another application searches back to back
 *   meanwhile, against its latency alone;
 * - searches of a catalog with the most metadata the spec allows (issue 34): 100 images of 30 fields of 5000
 *   three-byte characters (45 MB), `/search` without `fl` 4 times in a row and 8 at once, and another application's
 *   search while the 8 run, against its latency alone.
 * Written to `.local/memory.json` too. Not a test: the figures depend on the machine.
 *
 *   npm run measure:memory -- --only insert-bodies   # the authenticated /insert rows alone, without the large catalog
 */

const { values: args } = parseArgs({ options: { only: { type: 'string' } } });
if (args.only !== undefined && args.only !== 'insert-bodies') throw new Error(`--only: insert-bodies is the one part that runs alone, got ${args.only}`);

const STATE_DIR = path.join(ROOT, '.wrangler/measure-memory-state');
const OUT = path.join(ROOT, '.local/memory.json');
/** The local stack's output (wrangler, the Worker's request log, the inference service). */
const LOG = path.join(ROOT, '.local/logs/measure-memory.log');
const CONCURRENT = 10;

type Scenario = { name: string; run: () => Promise<string[]> };
type Row = { scenario: string; answers: string; seconds: number; workerMiB: number; workerBeforeMiB: number; inferenceMiB: number };

const LARGE_CATALOG = { images: 100, fields: 30, perInsert: 20 };
/** 5000 characters, the most a value may have (spec 2.1), of three bytes each in UTF-8. */
const LARGE_VALUE = '漢'.repeat(5000);

/** The other application's search, timed alone and while hostile calls run. */
const OTHER_QUERY = 'im_name=other0&limit=10';

/** The status and the envelope's first error: a message (`401 Unauthorized.`) or a data error (`200 104 No image inserted.`). */
const statusOf = async (response: Response): Promise<string> => {
  const text = await response.text();
  const [, message, code, dataMessage] = /"error":\[(?:"([^"]+)"|\{[^}]*?"error_code":(\d+),"error_message":"([^"]+)")/.exec(text) ?? [];
  const error = message ?? (code ? `${code} ${dataMessage}` : undefined);
  return error ? `${response.status} ${error}` : `${response.status}`;
};

/**
 * A POST of `body`, answered with the status and first error of the answer, or `reset` when the connection closed
 * under the body before an answer could be read: wrangler's local proxy closes it as soon as the Worker answers a
 * call it refused after a part of its body, and a client still sending then loses the answer with the connection.
 */
function postReadingEarlyAnswer(url: string, headers: Record<string, string>, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const outgoing = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => void statusOf(new Response(Buffer.concat(chunks), { status: incoming.statusCode ?? 0 })).then(resolve));
      incoming.on('error', () => resolve('reset'));
    });
    outgoing.on('error', () => resolve('reset'));
    // The socket may report the cut after the request has let it go: the same reset.
    outgoing.on('socket', (socket) => socket.on('error', () => undefined));
    outgoing.end(body);
  });
}

/**
 * The Worker's own answers to the `/insert` calls `send` makes, as its request log has them (status, failure, time in
 * the Worker), after the answers the client read (`reset` when the connection closed first).
 */
async function insertsAsLogged(send: () => Promise<string[]>): Promise<string[]> {
  const from = statSync(LOG).size;
  const client = await send();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const logged = readFileSync(LOG).subarray(from).toString('utf8').split('\n').flatMap((line) => {
    if (!line.startsWith('{"event":"request"')) return [];
    const entry = JSON.parse(line) as { endpoint: string; status: number; fail?: string; ms: number };
    return entry.endpoint === 'insert' ? [`the Worker: ${entry.status} ${entry.fail ?? 'OK'} after ${entry.ms} ms`] : [];
  });
  return [...logged, ...client.map((answer) => `the client: ${answer}`)];
}

/** How many of each answer came: `10 x 200 Unauthorized.`. */
const tally = (answers: string[]): string =>
  [...answers.reduce((counts, answer) => counts.set(answer, (counts.get(answer) ?? 0) + 1), new Map<string, number>())]
    .map(([answer, count]) => `${count} x ${answer}`)
    .join('; ');

/** Resident memory of workerd and of the inference service now, in MiB. */
async function residentNow(): Promise<Record<string, number>> {
  const sample = sampleMemory(process.pid, processKind);
  await new Promise((resolve) => setTimeout(resolve, 500));
  return Object.fromEntries(Object.entries(sample.stop()).map(([label, memory]) => [label, memory.peakRssMiB]));
}

/** The scenario's answers, and the peak memory of each process above its level just before (RSS is not given back). */
async function measure(scenario: Scenario): Promise<Row> {
  const before = await residentNow();
  const memory = sampleMemory(process.pid, processKind);
  const started = performance.now();
  const answers = await scenario.run();
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const peaks = memory.stop();
  return {
    scenario: scenario.name,
    answers: tally(answers),
    seconds,
    workerMiB: (peaks.worker?.peakRssMiB ?? 0) - (before.worker ?? 0),
    workerBeforeMiB: before.worker ?? 0,
    inferenceMiB: (peaks.inference?.peakRssMiB ?? 0) - (before.inference ?? 0),
  };
}

/** Inserts the images as one multipart `/insert` (no percent-encoding of the metadata) and waits for it. */
async function insertAll(stack: LocalStack, auth: AuthHeader, images: { name: string; url: string; metadata: Record<string, string> }[]): Promise<void> {
  const form = new FormData();
  images.forEach((image, index) => {
    form.set(`im_name[${index}]`, image.name);
    form.set(`im_url[${index}]`, image.url);
    for (const [field, value] of Object.entries(image.metadata)) form.set(`${field}[${index}]`, value);
  });
  const response = await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body: form });
  const body = (await response.json()) as { status: string; trans_id: number };
  if (body.status !== 'OK') throw new Error(`insert answered ${JSON.stringify(body)}`);
  const status = await waitForInsert(stack.baseUrl, auth, body.trans_id, { pollMs: 500, timeoutMs: 300_000 });
  if (status.fail_count > 0) throw new Error(`inserts failed: ${JSON.stringify(status.error_list)}`);
}

/** The fixture images the catalogs are made of. */
const catalogFiles = (): string[] => readdirSync(IMAGES_DIR).filter((file) => file.startsWith('opencv-doc_')).sort();

/** Another application, whose searches are timed while hostile calls run: a few images (`other0`...) and no metadata. */
async function loadOtherTenant(stack: LocalStack, admin: AdminConfig, imagesUrl: string): Promise<AuthHeader> {
  const other = await createApplication(admin, 'measure-other-tenant');
  await insertAll(stack, other, catalogFiles().slice(0, 5).map((file, n) => ({ name: `other${n}`, url: `${imagesUrl}/images/${file}`, metadata: {} })));
  return other;
}

/**
 * An application holding LARGE_CATALOG (`big0`...`big99`, fixture images, 30 non-searchable string fields full),
 * sent LARGE_CATALOG.perInsert images a call (the 20 MB body cap holds about 40 such images: docs/decisions.md).
 */
async function loadLargeCatalog(stack: LocalStack, admin: AdminConfig, imagesUrl: string): Promise<AuthHeader> {
  const fields = Array.from({ length: LARGE_CATALOG.fields }, (_, k) => ({ name: `f${k}`, type: 'string' as const, searchable: false }));
  const large = await createApplication(admin, 'measure-large-metadata', undefined, fields);
  const files = catalogFiles();
  const metadata = Object.fromEntries(fields.map((field) => [field.name, LARGE_VALUE]));
  console.log(`Inserting ${LARGE_CATALOG.images} images of ${LARGE_CATALOG.fields} fields of 5000 three-byte characters...`);
  for (let start = 0; start < LARGE_CATALOG.images; start += LARGE_CATALOG.perInsert) {
    const batch = Array.from({ length: Math.min(LARGE_CATALOG.perInsert, LARGE_CATALOG.images - start) }, (_, k) => start + k);
    await insertAll(stack, large, batch.map((n) => ({ name: `big${n}`, url: `${imagesUrl}/images/${files[n % files.length]}`, metadata })));
  }
  return large;
}

/** The answers of `/search` calls (`{status}` or the envelope's error), and how long each took, in ms. */
async function searchCall(stack: LocalStack, auth: AuthHeader, query: string): Promise<{ answer: string; ms: number }> {
  const started = performance.now();
  const answer = await statusOf(await fetch(`${stack.baseUrl}/search?${query}`, { headers: auth }));
  return { answer, ms: performance.now() - started };
}

/** Bodies no caller should be able to make the stack hold. */
function hostileBodies(stack: LocalStack): Scenario[] {
  const flood = 'a&'.repeat(1024 * 1024);
  const junk = new Uint8Array(45 * 1024 * 1024);
  return [
    {
      name: `${CONCURRENT} x 2 MB of a&a&... without credentials to /insert`,
      run: () => Promise.all(Array.from({ length: CONCURRENT }, async () => statusOf(await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: flood })))),
    },
    {
      name: `${CONCURRENT} x 2 MB of a&a&... without credentials to /uploadsearch`,
      run: () => Promise.all(Array.from({ length: CONCURRENT }, async () => statusOf(await fetch(`${stack.baseUrl}/uploadsearch`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: flood })))),
    },
    {
      name: `${CONCURRENT} x 45 MB to the inference service's /predict`,
      run: () =>
        Promise.all(
          Array.from({ length: CONCURRENT }, async () => {
            const form = predictForm(junk, ['embed']);
            const response = await fetch(`${stack.inferenceUrl}/predict`, { method: 'POST', body: form, headers: { authorization: `Bearer ${stack.inferenceSecret}` } });
            await response.arrayBuffer();
            return String(response.status);
          }),
        ),
    },
  ];
}

/** The other application's median search latency alone, in ms, of 5 in a row. */
async function otherAloneMs(stack: LocalStack, other: AuthHeader): Promise<number> {
  const samples: number[] = [];
  for (let n = 0; n < 5; n++) samples.push((await searchCall(stack, other, OTHER_QUERY)).ms);
  return latencyOf(samples).p50;
}

/**
 * The `calls`' answers while the other application searches back to back (a stalled isolate shows in the slowest
 * search, which one search started beside the calls could miss), and a summary of those searches.
 */
async function whileOtherSearches(stack: LocalStack, other: AuthHeader, aloneMs: number, calls: () => Promise<string[]>): Promise<string[]> {
  let running = true;
  const searches: { answer: string; ms: number }[] = [];
  const searching = (async () => {
    while (running) searches.push(await searchCall(stack, other, OTHER_QUERY));
  })();
  const answers = await calls().finally(() => (running = false));
  await searching;
  const { p50 } = latencyOf(searches.map(({ ms }) => ms));
  const slowest = Math.max(...searches.map(({ ms }) => ms));
  const statuses = [...new Set(searches.map(({ answer }) => answer))].join(', ');
  return [...answers, `other application: ${searches.length} searches meanwhile, ${statuses}, median ${Math.round(p50)} ms, slowest ${Math.round(slowest)} ms (${Math.round(aloneMs)} ms alone)`];
}

/** `count` parts named `a`, each valued `x`, as raw multipart bytes (FormData would take long to build and encode). */
function tinyParts(count: number): { body: Buffer; contentType: string } {
  const boundary = 'measure-memory-boundary-7f3c9e1d5b0a2c4e';
  const part = `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n`;
  return { body: Buffer.from(`${part.repeat(count)}--${boundary}--\r\n`), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Authenticated `/insert` bodies that carry no image, just under INSERT_MAX_BODY_BYTES (20 MB): a valid application
 * may send them, so what the Worker holds and how long it parses them is paid before anything is refused, and the
 * other application's searches share the isolate meanwhile.
 */
async function hostileInserts(stack: LocalStack, hostile: AuthHeader, other: AuthHeader): Promise<Scenario[]> {
  const flood = Buffer.from('a&'.repeat(9_500_000));
  const parts = tinyParts(150_000);
  const megabytes = (bytes: Buffer): string => `${(bytes.length / 1e6).toFixed(1)} MB`;
  const post = (body: Buffer, contentType: string): Promise<string> =>
    postReadingEarlyAnswer(`${stack.baseUrl}/insert`, { ...hostile, 'content-type': contentType }, body);
  const urlencoded = 'application/x-www-form-urlencoded';
  const aloneMs = await otherAloneMs(stack, other);
  // The smallest first: workerd does not give resident memory back, so a row after a larger one may show no growth.
  return [
    {
      name: `${megabytes(parts.body)} multipart of 150,000 parts a=x with credentials to /insert`,
      run: () => whileOtherSearches(stack, other, aloneMs, () => insertsAsLogged(async () => [await post(parts.body, parts.contentType)])),
    },
    {
      name: `${megabytes(flood)} of a&a&... (9.5 million empty parameters) with credentials to /insert`,
      run: () => whileOtherSearches(stack, other, aloneMs, () => insertsAsLogged(async () => [await post(flood, urlencoded)])),
    },
    {
      name: `the same, 4 at once`,
      run: () => whileOtherSearches(stack, other, aloneMs, () => insertsAsLogged(() => Promise.all(Array.from({ length: 4 }, () => post(flood, urlencoded))))),
    },
  ];
}

/** Searches of the catalog with the most metadata, and another application's search meanwhile. */
async function largeMetadataSearches(stack: LocalStack, { large, other }: { large: AuthHeader; other: AuthHeader }): Promise<Scenario[]> {
  const otherAlone = await searchCall(stack, other, OTHER_QUERY);
  return [
    {
      name: `/search?im_name=big0&limit=10 (no fl) over ${LARGE_CATALOG.images} images of 45 MB of metadata, 4 in a row`,
      run: async () => {
        const answers: string[] = [];
        for (let n = 0; n < 4; n++) {
          const { answer, ms } = await searchCall(stack, large, 'im_name=big0&limit=10');
          answers.push(`${answer} in ${(ms / 1000).toFixed(2)} s`);
        }
        return answers;
      },
    },
    {
      name: `the same with limit=1, 8 at once, and another application's /search meanwhile (${Math.round(otherAlone.ms)} ms alone)`,
      run: async () => {
        const big = Array.from({ length: 8 }, () => searchCall(stack, large, 'im_name=big0&limit=1'));
        const [meanwhile, ...done] = await Promise.all([searchCall(stack, other, OTHER_QUERY), ...big]);
        const slowest = Math.max(...done.map(({ ms }) => ms));
        return [...done.map(({ answer }) => answer), `other application: ${meanwhile.answer} in ${Math.round(meanwhile.ms)} ms; slowest of the 8: ${(slowest / 1000).toFixed(2)} s`];
      },
    },
  ];
}

async function main(): Promise<void> {
  rmSync(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, fixturesPort] = [await freePort(), await freePort(), await freePort()];
  mkdirSync(path.dirname(LOG), { recursive: true });
  console.log(`The local stack's output: ${path.relative(ROOT, LOG)}`);
  const stack = await startLocalStack({ port, inferencePort, adminToken: 'measure-memory', persistTo: STATE_DIR, log: openSync(LOG, 'w') });
  const fixtures = await startFixtureServer(fixturesPort);
  try {
    const admin = { baseUrl: stack.baseUrl, token: 'measure-memory' };
    const imagesUrl = `http://127.0.0.1:${fixturesPort}`;
    const idle = await residentNow();
    const rows: Row[] = [];
    if (args.only === undefined) for (const scenario of hostileBodies(stack)) rows.push(await measure(scenario));
    const other = await loadOtherTenant(stack, admin, imagesUrl);
    const hostile = await createApplication(admin, 'measure-hostile-inserts');
    for (const scenario of await hostileInserts(stack, hostile, other)) rows.push(await measure(scenario));
    if (args.only === undefined) {
      const large = await loadLargeCatalog(stack, admin, imagesUrl);
      for (const scenario of await largeMetadataSearches(stack, { large, other })) rows.push(await measure(scenario));
    }

    console.log(`\nidle: workerd ${idle.worker} MiB, inference ${idle.inference} MiB`);
    console.log('| scenario | answers | seconds | workerd peak above the level before | inference peak above the level before |\n| --- | --- | --- | --- | --- |');
    for (const row of rows) console.log(`| ${row.scenario} | ${row.answers} | ${row.seconds.toFixed(2)} | ${row.workerMiB} MiB (from ${row.workerBeforeMiB}) | ${row.inferenceMiB} MiB |`);
    mkdirSync(path.dirname(OUT), { recursive: true });
    writeFileSync(OUT, JSON.stringify({ idle, rows }, null, 2));
  } finally {
    fixtures.close();
    stack.stop();
  }
}

await main();
process.exit(0);
