import { once } from 'node:events';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { adminRequest, type AdminConfig } from './admin-client.ts';
import { createApplicationWithId, imageNameOf, INSERT_BATCH, insertForm, waitForInsert, type AuthHeader } from './api-client.ts';
import { startLocalStack, type LocalStack } from './local-stack.ts';
import { ROOT } from './wrangler-env.ts';

/**
 * Bytes of D1 per image (issue 45, "Rows that stay small"): the local stack inserts the test images, each several
 * times under other names and with no metadata, through /insert; the database's pages in use (its size less its free
 * pages, which later writes reuse) are read from the local D1 file before and after, and divided by the images stored.
 * Measured twice: with the finished insert items still kept (INSERT_STATUS_RETENTION_HOURS), and once the cron sweep
 * has deleted them (its clock set past the retention): the steady state, which the target is for. The local stack has
 * two databases: every one's pages are counted. Then the application is moved to the other database
 * (POST /admin/apps/{app_id}/move), timed: how long its writes were held, and the rows copied a second.
 */

/** Issue 45: at most this many bytes of D1 per image before metadata, in the steady state. */
export const ROWS_TARGET_BYTES = 600;
/** Each test image is inserted this many times: about 400 images, so that partly filled pages weigh little. */
const COPIES = 4;
/** Past the retention of a finished transaction's status (INSERT_STATUS_RETENTION_HOURS, at least a day). */
const PAST_RETENTION_MS = 25 * 3_600_000;

export type RowsState = { bytes: number; bytesPerImage: number };
/** A move of the application: rows copied, seconds its writes were held (until it switched), seconds in all. */
export type MoveRun = { rows: number; heldSeconds: number; seconds: number };
export type RowsRun = { date: string; images: number; stored: number; itemsKept: RowsState; steady: RowsState; move: MoveRun; seconds: number };

/** `log`: a file descriptor for the local stack's output (`npm run bench`'s log). */
export async function measureRows(log: number): Promise<RowsRun> {
  const started = performance.now();
  console.log('Bytes of D1 per image: inserting the test images with no metadata...');
  const persistTo = path.join(ROOT, '.wrangler/bench-rows-state');
  rmSync(persistTo, { recursive: true, force: true });
  const admin: AdminConfig = { baseUrl: '', token: 'bench-admin-token' };
  const [port, inferencePort, imagesPort] = [await freePort(), await freePort(), await freePort()];
  const stack = await startLocalStack({ port, inferencePort, adminToken: admin.token, persistTo, log });
  admin.baseUrl = stack.baseUrl;
  const fixtures = await startFixtureServer(imagesPort);
  try {
    const { appId, auth } = await createApplicationWithId(admin, 'bench-rows');
    const empty = await usedBytes(persistTo);
    const { images, stored } = await insertCopies(stack, auth, `http://127.0.0.1:${imagesPort}/images`);
    const kept = (await usedBytes(persistTo)) - empty;
    await sweepPastRetention(stack, persistTo);
    const steady = (await usedBytes(persistTo)) - empty;
    const state = (bytes: number): RowsState => ({ bytes, bytesPerImage: bytes / stored });
    const move = await timeMove(admin, appId);
    return { date: new Date().toISOString(), images, stored, itemsKept: state(kept), steady: state(steady), move, seconds: (performance.now() - started) / 1000 };
  } finally {
    fixtures.closeAllConnections();
    fixtures.close();
    stack.stop();
    await Promise.all(stack.children.map((child) => (child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined)));
  }
}

/** The test images COPIES times each (`<name>-<copy>`), INSERT_BATCH a call, to 100 %: how many were sent and stored. */
async function insertCopies(stack: LocalStack, auth: AuthHeader, imagesUrl: string): Promise<{ images: number; stored: number }> {
  const files = readdirSync(IMAGES_DIR).filter((file) => /\.(jpe?g|png)$/i.test(file));
  const items = Array.from({ length: COPIES }, (_, copy) => files.map((file) => ({ name: `${imageNameOf(file)}-${copy}`, url: `${imagesUrl}/${file}` }))).flat();
  let failed = 0;
  const transactions: number[] = [];
  for (let start = 0; start < items.length; start += INSERT_BATCH) {
    const response = await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: auth, body: insertForm(items.slice(start, start + INSERT_BATCH)) });
    const body = (await response.json()) as { status: string; trans_id: number; error: unknown[] };
    if (body.status === 'fail') throw new Error(`/insert answered ${JSON.stringify(body)}`);
    failed += body.error.length;
    transactions.push(body.trans_id);
  }
  for (const transId of transactions) failed += (await waitForInsert(stack.baseUrl, auth, transId, { pollMs: 200, timeoutMs: 10 * 60_000 })).fail_count;
  console.log(`... ${items.length - failed} of ${items.length} images stored`);
  return { images: items.length, stored: items.length - failed };
}

type MoveAnswer = { move: { state: string; rows_copied: number; error: string | null } };

/** Moves the application to the other database and waits until it is done: its rows, how long writes were held. */
async function timeMove(admin: AdminConfig, appId: string): Promise<MoveRun> {
  const app = await adminRequest<{ placement: { database: string } }>(admin, 'GET', `/admin/apps/${appId}`);
  const databases = await adminRequest<{ databases: { name: string }[] }>(admin, 'GET', '/admin/placement');
  const to = databases.body.databases.map(({ name }) => name).find((name) => name !== app.body.placement.database);
  if (!to) throw new Error('the local stack has one database: nothing to move the application to');
  console.log(`... moving the application from ${app.body.placement.database} to ${to}`);
  const started = performance.now();
  const begun = await adminRequest<MoveAnswer>(admin, 'POST', `/admin/apps/${appId}/move`, { database: to });
  if (begun.status !== 202) throw new Error(`the move was refused: ${JSON.stringify(begun.body)}`);
  let heldSeconds: number | undefined;
  for (;;) {
    const { body } = await adminRequest<MoveAnswer>(admin, 'GET', `/admin/apps/${appId}/move`);
    if (heldSeconds === undefined && body.move.state !== 'copying') heldSeconds = (performance.now() - started) / 1000;
    if (body.move.state === 'done') return { rows: body.move.rows_copied, heldSeconds: heldSeconds!, seconds: (performance.now() - started) / 1000 };
    if (body.move.state === 'failed' || performance.now() - started > 10 * 60_000) throw new Error(`the move did not finish: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Runs the cron sweep with its clock past the retention until the finished transactions are gone. */
async function sweepPastRetention(stack: LocalStack, persistTo: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await fetch(`${stack.baseUrl}/cdn-cgi/local/scheduled?cron=${encodeURIComponent('*/10 * * * *')}&time=${Date.now() + PAST_RETENTION_MS}`);
    await response.arrayBuffer();
    if ((await query(persistTo, 'SELECT count(*) AS n FROM insert_transactions')).every((row) => row.n === 0)) return;
    if (Date.now() > deadline) throw new Error('the sweep left finished transactions past their retention');
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** The pages the local D1 databases use, in bytes: their sizes less their free pages. */
async function usedBytes(persistTo: string): Promise<number> {
  const rows = await query(persistTo, 'SELECT page_size * (page_count - freelist_count) AS n FROM pragma_page_size, pragma_page_count, pragma_freelist_count');
  return rows.reduce((sum, row) => sum + row.n, 0);
}

/** One read of each local D1 database's file (wrangler keeps them under `persistTo`), beside the running Worker: its rows. */
async function query(persistTo: string, sql: string): Promise<{ n: number }[]> {
  const folder = path.join(persistTo, 'v3/d1/miniflare-D1DatabaseObject');
  const files = readdirSync(folder).filter((name) => name.endsWith('.sqlite') && name !== 'metadata.sqlite');
  if (files.length === 0) throw new Error(`no D1 database under ${folder}`);
  const { DatabaseSync } = await quietly(() => import('node:sqlite'));
  return files.flatMap((file) => {
    const db = new DatabaseSync(path.join(folder, file), { readOnly: true });
    try {
      return db.prepare(sql).all() as { n: number }[];
    } finally {
      db.close();
    }
  });
}

/** node:sqlite warns once that it is experimental: the bench prints its progress and tables only. */
async function quietly<T>(load: () => Promise<T>): Promise<T> {
  const emit = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return await load();
  } finally {
    process.emitWarning = emit;
  }
}

/** The rows of the bench's table: steady state against the target, with the items still kept beside it; the move. */
export function rowsReport(run: RowsRun): [string, string, string][] {
  const bytes = (state: RowsState): string => `${state.bytesPerImage.toFixed(0)} B`;
  const { move } = run;
  return [
    [
      `D1 bytes per image, no metadata (${run.stored} images): steady state; finished insert items still kept`,
      `${bytes(run.steady)}; ${bytes(run.itemsKept)}`,
      `steady <= ${ROWS_TARGET_BYTES} B: ${run.steady.bytesPerImage <= ROWS_TARGET_BYTES ? 'met' : 'NOT met'}`,
    ],
    [
      `moving that application to the other database: rows copied; writes held; in all`,
      `${move.rows} rows (${(move.rows / move.heldSeconds).toFixed(0)} a second held); ${move.heldSeconds.toFixed(1)} s; ${move.seconds.toFixed(1)} s`,
      '',
    ],
  ];
}
