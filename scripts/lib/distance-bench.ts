import { once } from 'node:events';
import { readdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import type { AdminConfig } from './admin-client.ts';
import { createApplication, imageNameOf, insertForm, waitForInsert, type AuthHeader } from './api-client.ts';
import { latencyOf, type Latency } from './latency.ts';
import { startLocalStack, type LocalStack } from './local-stack.ts';
import { serverTimingEntries } from './server-timing.ts';
import { ROOT } from './wrangler-env.ts';

/**
 * Searches and inserts with the database far away (issue 37; docs/deploy.md): the local stack started twice, with the
 * D1 primary simulated 0 ms and then 100 ms away (`D1_SIMULATED_PRIMARY_MS`), a replica read 5 ms away in both
 * (`D1_SIMULATED_REPLICA_MS`). Each run makes an application with a small catalog, warms it up (the isolate's cache of
 * the application and the sessions are warm: the steady state of a shop's traffic), then times each endpoint's
 * requests one after another, with the round trips each answer's Server-Timing reports.
 */

export const PRIMARY_MS = [0, 100] as const;
export const REPLICA_MS = 5;
const CATALOG_IMAGES = 20;
const WARM_UP_REQUESTS = 5;
const TIMED_REQUESTS = 30;
const QUERY_COLOR = '8b4513';

/** Targets (issue 37, Measured by). */
const SEARCH_PRIMARY_TRIPS = 0;
const SEARCH_P50_DRIFT_MS = 20;
const INSERT_PRIMARY_TRIPS = 2;

/** The Server-Timing entries counted, each `name;dur=<ms>;desc="<count>"`. */
const COUNTED = { primary: 'd1-primary', replica: 'd1-replica', vectorIndex: 'vector-index' } as const;
type Counted = keyof typeof COUNTED;

/** What one answer said: its time here, and each counted entry's count and time (absent when the answer had none). */
type Sample = { ms: number } & Partial<Record<Counted, { count: number; ms: number }>>;

/**
 * Counts per request over the answers that carried the entry (`answers` of the timed ones); null when none did, as
 * before the Worker wrote them: never read as zero.
 */
type Trips = { mean: number; min: number; max: number; meanMs: number; answers: number; requestsByCount: Record<number, number> } | null;

export type DistanceRow = { endpoint: string; primaryMs: number; replicaMs: number; latency: Latency } & Record<Counted, Trips>;
export type DistanceRun = { date: string; replicaMs: number; catalogImages: number; warmUp: number; rows: DistanceRow[]; seconds: number };

type Endpoint = { name: string; request: (i: number) => Promise<Response> };

/** `log`: a file descriptor for the local stacks' output (`npm run bench`'s log). */
export async function measureDistance(log: number): Promise<DistanceRun> {
  const started = performance.now();
  const rows: DistanceRow[] = [];
  for (const primaryMs of PRIMARY_MS) rows.push(...(await measureAt(primaryMs, log)));
  return { date: new Date().toISOString(), replicaMs: REPLICA_MS, catalogImages: CATALOG_IMAGES, warmUp: WARM_UP_REQUESTS, rows, seconds: (performance.now() - started) / 1000 };
}

async function measureAt(primaryMs: number, log: number): Promise<DistanceRow[]> {
  console.log(`Distance: the D1 primary ${primaryMs} ms away, a replica ${REPLICA_MS} ms...`);
  const persistTo = path.join(ROOT, '.wrangler/bench-distance-state');
  rmSync(persistTo, { recursive: true, force: true });
  const admin: AdminConfig = { baseUrl: '', token: 'bench-admin-token' };
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  const vars = { D1_SIMULATED_PRIMARY_MS: String(primaryMs), D1_SIMULATED_REPLICA_MS: String(REPLICA_MS) };
  const stack = await startLocalStack({ port, inferencePort, adminToken: admin.token, persistTo, vars, log });
  admin.baseUrl = stack.baseUrl;
  const fixtures = await startFixtureServer(imagesPort);
  try {
    const imagesUrl = `http://127.0.0.1:${imagesPort}/images`;
    const auth = await createApplication(admin, `bench-distance-${primaryMs}`);
    const { stored, files } = await insertCatalog(stack, auth, imagesUrl);
    const endpoints = await endpointsOf(stack, auth, stored, files, imagesUrl);
    const rows: DistanceRow[] = [];
    for (const { name, request } of endpoints) {
      for (let i = 0; i < WARM_UP_REQUESTS; i++) await sample(name, () => request(i));
      const samples: Sample[] = [];
      for (let i = 0; i < TIMED_REQUESTS; i++) samples.push(await sample(name, () => request(WARM_UP_REQUESTS + i)));
      rows.push({
        endpoint: name,
        primaryMs,
        replicaMs: REPLICA_MS,
        latency: latencyOf(samples.map(({ ms }) => ms)),
        primary: tripsOf(samples, 'primary'),
        replica: tripsOf(samples, 'replica'),
        vectorIndex: tripsOf(samples, 'vectorIndex'),
      });
    }
    return rows;
  } finally {
    fixtures.closeAllConnections();
    fixtures.close();
    stack.stop();
    // The next run starts on a quiet machine.
    await Promise.all(stack.children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined)));
  }
}

/** The first test images, inserted by URL in one call: the names stored (some images are too small and refused). */
async function insertCatalog(stack: LocalStack, auth: AuthHeader, imagesUrl: string): Promise<{ stored: string[]; files: string[] }> {
  const files = readdirSync(IMAGES_DIR)
    .filter((file) => /\.(jpe?g|png)$/i.test(file))
    .sort()
    .slice(0, CATALOG_IMAGES);
  const response = await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm(files.map((file) => ({ name: imageNameOf(file), url: `${imagesUrl}/${file}` }))) });
  const body = (await response.json()) as { status: string; trans_id: number; error: { im_name: string }[] };
  if (body.status === 'fail') throw new Error(`the catalog's /insert answered ${JSON.stringify(body)}`);
  const status = await waitForInsert(stack.baseUrl, auth, body.trans_id, { pollMs: 200, timeoutMs: 5 * 60_000 });
  const failed = new Set([...body.error, ...status.error_list].map(({ im_name }) => im_name));
  const storedFiles = files.filter((file) => !failed.has(imageNameOf(file)));
  if (storedFiles.length === 0) throw new Error('no catalog image was stored');
  console.log(`... catalog: ${storedFiles.length} of ${files.length} images stored`);
  return { stored: storedFiles.map(imageNameOf), files: storedFiles };
}

/**
 * The endpoints timed: `/search` of a stored image, `/colorsearch` of one colour, `/uploadsearch` by the `im_id` of an
 * earlier upload (its analysis kept: no inference call), and `/insert` of one image by URL under a new name each time.
 */
async function endpointsOf(stack: LocalStack, auth: AuthHeader, stored: string[], files: string[], imagesUrl: string): Promise<Endpoint[]> {
  const upload = new FormData();
  upload.set('image', new Blob([new Uint8Array(await readFile(path.join(IMAGES_DIR, files[0]!)))]), files[0]!);
  const uploaded = await answerOf('/uploadsearch (the upload)', await fetch(`${stack.baseUrl}/uploadsearch`, { method: 'POST', headers: auth, body: upload }));
  const imId = String(uploaded.im_id);
  const get = (pathAndQuery: string) => () => fetch(`${stack.baseUrl}${pathAndQuery}`, { headers: auth });
  return [
    { name: '/search', request: (i) => get(`/search?im_name=${encodeURIComponent(stored[i % stored.length]!)}&limit=10`)() },
    { name: '/colorsearch', request: get(`/colorsearch?color=${QUERY_COLOR}&limit=10`) },
    { name: '/uploadsearch (im_id)', request: get(`/uploadsearch?im_id=${imId}&limit=10`) },
    {
      name: '/insert (1 image by URL)',
      request: (i) => fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm([{ name: `distance-${i}`, url: `${imagesUrl}/${files[i % files.length]!}` }]) }),
    },
  ];
}

async function answerOf(endpoint: string, response: Response): Promise<Record<string, unknown>> {
  const body = (await response.json()) as Record<string, unknown>;
  if (body.status !== 'OK') throw new Error(`${endpoint} answered ${response.status} ${JSON.stringify(body)}`);
  return body;
}

async function sample(endpoint: string, request: () => Promise<Response>): Promise<Sample> {
  const started = performance.now();
  const response = await request();
  await answerOf(endpoint, response);
  const ms = performance.now() - started;
  const entries = serverTimingEntries(response.headers.get('server-timing'));
  const counted: Sample = { ms };
  for (const [key, name] of Object.entries(COUNTED) as [Counted, string][]) {
    const entry = entries[name];
    if (entry?.desc !== undefined) counted[key] = { count: Number(entry.desc), ms: entry.dur ?? 0 };
  }
  return counted;
}

function tripsOf(samples: Sample[], key: Counted): Trips {
  const carried = samples.flatMap((s) => (s[key] ? [s[key]] : []));
  if (carried.length === 0) return null;
  const counts = carried.map(({ count }) => count);
  const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  const requestsByCount: Record<number, number> = {};
  for (const count of counts) requestsByCount[count] = (requestsByCount[count] ?? 0) + 1;
  return { mean: mean(counts), min: Math.min(...counts), max: Math.max(...counts), meanMs: mean(carried.map(({ ms }) => ms)), answers: carried.length, requestsByCount };
}

const ms = (value: number): string => `${value.toFixed(1)} ms`;

/** A count per request: the one value when all agree, else the mean and the range; "–" when no answer carried it. */
function tripsText(trips: Trips, requests: number): string {
  if (!trips) return '–';
  const counts = trips.min === trips.max ? `${trips.min}` : `${trips.mean.toFixed(2)} (${trips.min}–${trips.max})`;
  return trips.answers < requests ? `${counts}, in ${trips.answers} of ${requests} answers` : counts;
}

const meets = (ok: boolean): string => (ok ? 'met' : 'NOT met');

/** Whether every request made at most `most` primary round trips, with those that made more. */
function primaryTarget(rows: DistanceRow[], most: number): string {
  if (rows.some((row) => !row.primary)) return 'unknown: the answers carry no d1-primary count';
  const over = rows.flatMap((row) =>
    Object.entries(row.primary!.requestsByCount)
      .filter(([count]) => Number(count) > most)
      .map(([count, requests]) => `${requests} of ${row.latency.requests} at ${count} with the primary ${row.primaryMs} ms away`),
  );
  return over.length === 0 ? meets(true) : `${meets(false)} (${over.join('; ')})`;
}

/** The table, then each target beside what was measured. */
export function distanceReport(run: DistanceRun): string {
  const header = '| endpoint | primary | p50 | p95 | D1 primary round trips | D1 replica round trips | vector-index calls |\n| --- | --- | --- | --- | --- | --- | --- |';
  const lines = run.rows.map((row) =>
    [row.endpoint, `${row.primaryMs} ms`, ms(row.latency.p50), ms(row.latency.p95), tripsText(row.primary, row.latency.requests), tripsText(row.replica, row.latency.requests), tripsText(row.vectorIndex, row.latency.requests)].join(' | '),
  );
  const targets: string[] = [];
  const near = PRIMARY_MS[0];
  const far = PRIMARY_MS[PRIMARY_MS.length - 1]!;
  for (const endpoint of [...new Set(run.rows.map((row) => row.endpoint))]) {
    const at = (primaryMs: number) => run.rows.find((row) => row.endpoint === endpoint && row.primaryMs === primaryMs);
    const rows = run.rows.filter((row) => row.endpoint === endpoint);
    if (endpoint.startsWith('/insert')) {
      targets.push(`${endpoint}: at most ${INSERT_PRIMARY_TRIPS} primary round trips: ${primaryTarget(rows, INSERT_PRIMARY_TRIPS)}`);
      continue;
    }
    const drift = at(far)!.latency.p50 - at(near)!.latency.p50;
    targets.push(
      `${endpoint}: ${SEARCH_PRIMARY_TRIPS} primary round trips: ${primaryTarget(rows, SEARCH_PRIMARY_TRIPS)}; ` +
        `p50 at ${far} ms ${drift >= 0 ? '+' : ''}${ms(drift)} over ${near} ms (at most +${SEARCH_P50_DRIFT_MS} ms): ${meets(drift <= SEARCH_P50_DRIFT_MS)}`,
    );
  }
  return [
    `Distance (issue 37): the D1 primary ${PRIMARY_MS.join(' and ')} ms away, a replica read ${run.replicaMs} ms; ${run.catalogImages} catalog images; ` +
      `${run.rows[0]?.latency.requests ?? 0} requests per row one after another, after ${run.warmUp} to warm up; round trips per request from Server-Timing.`,
    `${header}\n${lines.map((line) => `| ${line} |`).join('\n')}`,
    `Targets:\n${targets.map((line) => `- ${line}`).join('\n')}`,
  ].join('\n\n');
}
