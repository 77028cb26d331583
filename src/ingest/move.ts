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
import { advanceMove, copyRows, deleteRows, getMove, MOVE_UNDER_WAY, MOVED_TABLES, noteMoveError, QUERY_IMAGES_TABLE, unfence, type Move } from '../storage/moves';
import { raiseSequence } from '../storage/sequence';
import { formatTimestamp, parseTimestamp } from '../time';
import { ENDED, nextStep, type JobKind, type JobStep } from './job-step';
import type { MoveMessage } from './message';

/** Rows copied per D1 batch of single-row inserts, and batches per step: the writes are held while they are copied. */
const COPY_CHUNK = 200;
const COPY_BATCHES_PER_STEP = 5;
/** Rows deleted from the source per step, per table. */
const CLEAN_CHUNK = 500;
/** The cleaning pass's first table: query images written to the source since they were copied, copied again. */
const RECOPY = MOVED_TABLES.length;

async function copyStep(env: Env, app: AppRecord, move: Move): Promise<JobStep> {
  // The target's copy of the application's row first: its catalog rows name it (storage/apps.ts, anchorApp).
  if (move.tableIndex === 0 && move.cursor === 0) await anchorApp(env, move.toDatabase, app.id, app.embedModel, app.createdAt);
  const [source, target] = [databaseNamed(env, move.fromDatabase), databaseNamed(env, move.toDatabase)];
  let [cursor, copied] = [move.cursor, 0];
  for (let batch = 0; batch < COPY_BATCHES_PER_STEP; batch++) {
    const rows = await copyRows(source, target, move.appId, move.tableIndex, cursor, COPY_CHUNK);
    if (!rows) break;
    [cursor, copied] = [rows.cursor, copied + rows.copied];
  }
  if (copied > 0) return nextStep('now', await advanceMove(env.DB, move, { cursor, copied }));
  const next = move.tableIndex + 1;
  return nextStep('now', await advanceMove(env.DB, move, next < MOVED_TABLES.length ? { tableIndex: next, cursor: 0 } : { state: 'switching', tableIndex: 0, cursor: 0 }));
}

/**
 * Every row is in the target: its numbers go on above the application's, and the application switches in one
 * update. The source's rows stay until no isolate can still read or write them through a cached copy.
 */
async function switchStep(env: Env, move: Move): Promise<JobStep> {
  await raiseSequence(databaseNamed(env, move.fromDatabase), databaseNamed(env, move.toDatabase));
  await setAppDatabase(env.DB, move.appId, move.toDatabase);
  const ttlMs = appCacheTtlMs(env);
  const notBefore = formatTimestamp(new Date(Date.now() + ttlMs));
  return nextStep('wait', await advanceMove(env.DB, move, { state: 'cleaning', tableIndex: RECOPY, cursor: 0, notBefore }), Math.ceil(ttlMs / 1000) + 1);
}

async function cleanStep(env: Env, move: Move): Promise<JobStep> {
  const waitMs = move.notBefore ? parseTimestamp(move.notBefore) - Date.now() : 0;
  if (waitMs > 0) return nextStep('wait', await advanceMove(env.DB, move), Math.ceil(waitMs / 1000));
  const source = databaseNamed(env, move.fromDatabase);
  if (move.tableIndex === RECOPY) {
    const copied = await copyRows(source, databaseNamed(env, move.toDatabase), move.appId, QUERY_IMAGES_TABLE, move.cursor, COPY_CHUNK, 'ignore');
    return nextStep('now', await advanceMove(env.DB, move, copied ? { cursor: copied.cursor } : { tableIndex: MOVED_TABLES.length - 1, cursor: 0 }));
  }
  if (move.tableIndex >= 0) {
    // Last table first, so that a row goes before those it names.
    const deleted = await deleteRows(source, move.appId, move.tableIndex, CLEAN_CHUNK);
    return nextStep('now', await advanceMove(env.DB, move, deleted < CLEAN_CHUNK ? { tableIndex: move.tableIndex - 1 } : {}));
  }
  await unanchorApp(env, move.fromDatabase, move.appId);
  await unfence(source, move.appId);
  await advanceMove(env.DB, move, { state: 'done' });
  return ENDED;
}

async function continueMove(env: Env, app: AppRecord, step: number): Promise<JobStep> {
  const move = await getMove(env.DB, app.id);
  if (!move || move.step !== step || !MOVE_UNDER_WAY.includes(move.state)) return ENDED;
  if (move.state === 'copying') return copyStep(env, app, move);
  if (move.state === 'switching') return switchStep(env, move);
  return cleanStep(env, move);
}

export const MOVE_JOB: JobKind<MoveMessage> = {
  name: 'move',
  appOf: (body) => body.move,
  message: (move, step) => ({ move, step }),
  run: continueMove,
  noteError: noteMoveError,
};
