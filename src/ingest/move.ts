/**
 * Moving an application to another D1 database while it keeps serving (docs/decisions.md, "Placement"), a job of the
 * admin jobs' shape (job-step.ts). Its writes are held from the start (a fence in the source, storage/moves.ts):
 * whoever writes meanwhile is answered busy (the API) or tries again later (the queue), so nothing accepted is lost or
 * applied out of order, while searches read the source, whose rows hold still. The rows are copied a chunk a step;
 * one update of `apps` then switches the application; once every isolate's cached copy of it has expired, its rows
 * are deleted from the source and the fence lifted.
 */
import type { Env } from '../env';
import { appCacheTtlMs } from '../storage/app-cache';
import { anchorApp, setAppDatabase, unanchorApp, type AppRecord } from '../storage/apps';
import { databaseNamed } from '../storage/databases';
import {
  advanceMove,
  copyRows,
  deleteRows,
  failMove,
  fence,
  getMove,
  MOVE_UNDER_WAY,
  MOVED_TABLES,
  noteMoveError,
  QUERY_IMAGES_TABLE,
  resumeMove,
  stalledMoves,
  unfence,
  type Move,
} from '../storage/moves';
import { raiseSequence } from '../storage/sequence';
import { pendingItemsAfter } from '../storage/transactions';
import { formatTimestamp, parseTimestamp } from '../time';
import { ENDED, MAX_RESUMES, nextStep, stalledReason, type JobKind, type JobStep } from './job-step';
import { sendInsertMessages, type MoveMessage } from './message';

/** Rows copied per D1 batch of single-row inserts, and batches per step: the writes are held while they are copied. */
const COPY_CHUNK = 200;
/** D1 round trips a step of the copy or the cleaning makes at most (a table found empty takes one). */
const QUERIES_PER_STEP = 8;
/** Rows deleted from the source per statement. */
const CLEAN_CHUNK = 500;
/** The cleaning's passes before the source's rows are deleted, last table first (`tableIndex` counts down to -1). */
const RECOPY = MOVED_TABLES.length;
const RESEND = MOVED_TABLES.length + 1;
/** Messages sent per query of the items pending in the target. */
const RESEND_CHUNK = 100;

/**
 * Before the first row is copied: the fence stands (set again, in case the request that set it died before), the
 * target has the application's row, and nothing of it (what a move there given up left); true once all that is so.
 */
async function prepareTarget(env: Env, app: AppRecord, move: Move, source: D1Database, target: D1Database): Promise<boolean> {
  await fence(source, app.id, formatTimestamp());
  // Its catalog rows name it (storage/apps.ts, anchorApp).
  await anchorApp(env, move.toDatabase, app.id, app.embedModel, app.createdAt);
  let emptied = true;
  for (let table = MOVED_TABLES.length - 1; table >= 0; table--) {
    if ((await deleteRows(target, app.id, table, CLEAN_CHUNK)) === CLEAN_CHUNK) emptied = false;
  }
  return emptied;
}

/** The copy, a table after another, up to QUERIES_PER_STEP batches a step; then the switch, in the same step. */
async function copyStep(env: Env, app: AppRecord, move: Move): Promise<JobStep> {
  const [source, target] = [databaseNamed(env, move.fromDatabase), databaseNamed(env, move.toDatabase)];
  if (move.tableIndex === 0 && move.cursor === 0 && !(await prepareTarget(env, app, move, source, target))) return nextStep('now', await advanceMove(env.DB, move));
  let { tableIndex, cursor } = move;
  let copied = 0;
  for (let query = 0; query < QUERIES_PER_STEP && tableIndex < MOVED_TABLES.length; query++) {
    const rows = await copyRows(source, target, move.appId, tableIndex, cursor, COPY_CHUNK);
    if (rows) [cursor, copied] = [rows.cursor, copied + rows.copied];
    else [tableIndex, cursor] = [tableIndex + 1, 0];
  }
  if (tableIndex < MOVED_TABLES.length) return nextStep('now', await advanceMove(env.DB, move, { tableIndex, cursor, copied }));
  return switchTo(env, move, copied);
}

/**
 * Every row is in the target: its numbers go on above the application's, and the application switches in one
 * update. The source's rows stay until no isolate can still read or write them through a cached copy.
 */
async function switchTo(env: Env, move: Move, copied = 0): Promise<JobStep> {
  await raiseSequence(databaseNamed(env, move.fromDatabase), databaseNamed(env, move.toDatabase));
  await setAppDatabase(env.DB, move.appId, move.toDatabase);
  const ttlMs = appCacheTtlMs(env);
  const notBefore = formatTimestamp(new Date(Date.now() + ttlMs));
  return nextStep('wait', await advanceMove(env.DB, move, { state: 'cleaning', tableIndex: RESEND, cursor: 0, copied, notBefore }), Math.ceil(ttlMs / 1000) + 1);
}

/**
 * Once no isolate can still write to the source: a message for each item pending in the target (one whose message
 * came back to the source after the source's copy was deleted would otherwise wait for the sweeper), the query images
 * again, then the source's rows, last table first (a row goes before those it names); then done.
 */
async function cleanStep(env: Env, move: Move): Promise<JobStep> {
  const waitMs = move.notBefore ? parseTimestamp(move.notBefore) - Date.now() : 0;
  if (waitMs > 0) return nextStep('wait', await advanceMove(env.DB, move), Math.ceil(waitMs / 1000));
  const source = databaseNamed(env, move.fromDatabase);
  let { tableIndex, cursor } = move;
  for (let query = 0; query < QUERIES_PER_STEP && tableIndex >= 0; query++) {
    if (tableIndex === RESEND) {
      const pending = await pendingItemsAfter(databaseNamed(env, move.toDatabase), move.appId, cursor, RESEND_CHUNK);
      if (pending.length > 0) await sendInsertMessages(env, pending.map(({ transId, index, kind }) => ({ transId, index, kind, database: move.toDatabase })));
      if (pending.length === RESEND_CHUNK) cursor = pending.at(-1)!.rowid;
      else [tableIndex, cursor] = [RECOPY, 0];
    } else if (tableIndex === RECOPY) {
      const rows = await copyRows(source, databaseNamed(env, move.toDatabase), move.appId, QUERY_IMAGES_TABLE, cursor, COPY_CHUNK, 'ignore');
      if (rows) cursor = rows.cursor;
      else [tableIndex, cursor] = [MOVED_TABLES.length - 1, 0];
    } else if ((await deleteRows(source, move.appId, tableIndex, CLEAN_CHUNK)) < CLEAN_CHUNK) tableIndex--;
  }
  if (tableIndex >= 0) return nextStep('now', await advanceMove(env.DB, move, { tableIndex, cursor }));
  await unanchorApp(env, move.fromDatabase, move.appId);
  await unfence(source, move.appId);
  await advanceMove(env.DB, move, { state: 'done' });
  return ENDED;
}

async function continueMove(env: Env, app: AppRecord, step: number): Promise<JobStep> {
  const move = await getMove(env.DB, app.id);
  if (!move || move.step !== step || !MOVE_UNDER_WAY.includes(move.state)) return ENDED;
  if (move.state === 'copying') return copyStep(env, app, move);
  return cleanStep(env, move);
}

export const MOVE_JOB: JobKind<MoveMessage, Move> = {
  name: 'move',
  appOf: (body) => body.move,
  message: (move, step) => ({ move, step }),
  run: continueMove,
  rowsIn: 'control',
  noteError: noteMoveError,
  stalled: stalledMoves,
  // One that keeps stalling while it copies is given up, its fence lifted: the application's writes go on where it is.
  async recover(env, control, move) {
    if (move.state !== 'copying' || move.resumes < MAX_RESUMES) return resumeMove(control, move.appId);
    if (await failMove(control, move.appId, stalledReason(move))) await unfence(databaseNamed(env, move.fromDatabase), move.appId);
    return null;
  },
};
