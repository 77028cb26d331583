import type { Env } from '../env';
import { deleteExpiredQueryImages } from '../storage/query-images';
import { getSchema } from '../storage/apps';
import { getImagesByIds } from '../storage/images';
import { deleteRetiredVersions } from '../storage/retired';
import { staleVectorsFailed, staleVectorsLeft, vectorsRewritten, type StaleVectors } from '../storage/stale-vectors';
import { deleteFinishedTransactions, findStalledItems, insertStatusRetentionHours, kindsStartedSince, recordSweep, type ItemKind } from '../storage/transactions';
import { formatTimestamp } from '../time';
import { databaseNamed, databaseNames } from '../storage/databases';
import { failForGood } from './dead-letters';
import { deleteOrphanedStaged, deleteSettledStaged } from './staged-uploads';
import type { JobKind, StalledJob } from './job-step';
import { MAX_MESSAGES_PER_SEND, sendInsertMessages, sendJobMessage, type JobMessage } from './message';
import { MOVE_JOB } from './move';
import { REINDEX_JOB } from './reindex';
import { TUNING_JOB } from './tuning';
import { writeTargets } from '../storage/reindexes';
import { replaceVectorMetadata, vectorMetadata } from '../storage/vectors';

/**
 * An item a consumer started this long ago without settling it lost its message (the consumer died with it); so
 * did an item never started while its queue's consumer started nothing for this long (a local queue lost on restart;
 * for an update, while neither queue's did). Both are sent again, each to its own queue. Longer than an item's whole
 * retry budget (5 deliveries, each a 20 s download and inference calls, 30 s of backoff). An item merely queued
 * behind a backlog, however long, is neither.
 */
export const STALL_MINUTES = 30;
/** Re-sends of one item before it is given up as failed. */
export const MAX_SWEEPS = 3;
/** Items looked at per run; a larger backlog is taken over the next runs. */
const ITEMS_PER_RUN = 1000;
/** Batches of retired versions deleted per run, at most (100 each, storage/retired.ts); a larger backlog waits for the next run. */
const RETIRED_RUNS = 20;
/** Versions whose vectors are rewritten per run, at most. */
const STALE_PER_RUN = 100;
/** Finished transactions past their retention deleted per run, at most; a larger backlog waits for the next runs. */
const TRANSACTIONS_PER_RUN = 500;

/**
 * Gives a version's vectors the metadata of its D1 row, for an update given up after its merge. Written again while
 * D1 changed across the write: a later update may have written its own vectors before this write landed.
 */
async function rewriteStaleVectors(env: Env, database: string, stale: StaleVectors): Promise<void> {
  const db = databaseNamed(env, database);
  const app = { id: stale.appId, database };
  // Models read while the record holds a reindex's retire pass back: an old model emptied since is not written again.
  const [schema, { models }] = await Promise.all([getSchema(env, app), writeTargets(env, app)]);
  const live = async () => (await getImagesByIds(db, stale.appId, [stale.imageId], 'all')).get(stale.imageId);
  let written: string | undefined;
  for (let image = await live(); image && JSON.stringify(image.metadata) !== written; image = await live()) {
    written = JSON.stringify(image.metadata);
    await replaceVectorMetadata(env, image, vectorMetadata(image.metadata, schema), models);
  }
  await vectorsRewritten(db, stale.attempt).run();
}

/**
 * The cron half of "nothing accepted is ever lost, nothing removed stays": every pending item whose message looks
 * lost is sent again (a redelivery of an item already settled is a no-op), and one re-sent MAX_SWEEPS times in vain
 * is failed, so that every transaction reaches 100; vectors a metadata update given up left with older metadata than
 * D1 are rewritten; what retired image versions left is deleted, and the staged files of settled items; expired query
 * images are forgotten; a stalled reindex is resumed.
 */
export async function sweepStalledInserts(env: Env, now: Date): Promise<{ resent: number; failed: number }> {
  const swept = { resent: 0, failed: 0 };
  const before = formatTimestamp(new Date(now.getTime() - STALL_MINUTES * 60_000));
  // A queue is shared by every database: idle only while no item of its kind was started in any. A never-started
  // update may be waiting for an earlier image of its name (insert-item.ts): lost only while both queues are idle.
  const started = await Promise.all(databaseNames(env).map((database) => kindsStartedSince(databaseNamed(env, database), before)));
  const imagesIdle = !started.some((kinds) => kinds.image);
  const idle = { image: imagesIdle, metadata: imagesIdle && !started.some((kinds) => kinds.metadata) };
  // Each database in turn, each in the bounded batches below; then the staged files, named by applications.
  const databases: Record<string, DatabaseSwept> = {};
  for (const database of databaseNames(env)) {
    databases[database] = await sweepDatabase(env, database, now, { before, idle });
    swept.resent += databases[database].resent;
    swept.failed += databases[database].failed;
  }
  const orphanedStaged = await deleteOrphanedStaged(env, now);
  const jobs = await recoverStalledJobs(env, 'control', env.DB, before);
  // One line a run, what it did.
  console.log(JSON.stringify({ event: 'sweep', databases, orphanedStaged, jobs }));
  return swept;
}

/** Sends on each of a kind's jobs that stalled in `db` (or gives it up): how many there were. */
function recoveryOf<M extends JobMessage, S extends StalledJob>(kind: JobKind<M, S>) {
  return {
    rowsIn: kind.rowsIn,
    async recover(env: Env, db: D1Database, before: string): Promise<number> {
      const stalled = await kind.stalled(db, before);
      for (const job of stalled) {
        const step = await kind.recover(env, db, job);
        console.warn(JSON.stringify({ event: `${kind.name}_resumed`, appId: job.appId, step }));
        if (step !== null) await sendJobMessage(env.INSERT_QUEUE, kind.message(job.appId, step));
      }
      return stalled.length;
    },
  };
}

/** The admin jobs' kinds (ingest/job-step.ts), whose stalled jobs each sweep sends on. */
const JOB_RECOVERIES = [recoveryOf(REINDEX_JOB), recoveryOf(TUNING_JOB), recoveryOf(MOVE_JOB)];

/** The stalled jobs of every kind whose rows are `rowsIn`, in `db`, sent on: how many. */
async function recoverStalledJobs(env: Env, rowsIn: 'catalog' | 'control', db: D1Database, before: string): Promise<number> {
  let stalled = 0;
  for (const recovery of JOB_RECOVERIES.filter((each) => each.rowsIn === rowsIn)) stalled += await recovery.recover(env, db, before);
  return stalled;
}

/** What a sweep did in one database: items sent again and failed, stalled jobs sent on, vector records rewritten, rows deleted. */
type DatabaseSwept = Record<'resent' | 'failed' | 'jobs' | 'staleRewritten' | 'staleFailed' | 'retired' | 'retiredFailed' | 'queryImages' | 'transactions', number>;

/** One database's part of a sweep. */
async function sweepDatabase(env: Env, database: string, now: Date, { before, idle }: { before: string; idle: Record<ItemKind, boolean> }): Promise<DatabaseSwept> {
  const db = databaseNamed(env, database);
  const stalled = (await findStalledItems(db, before, ITEMS_PER_RUN, idle)).map((item) => ({ ...item, database }));
  const exhausted = stalled.filter((item) => item.sweeps >= MAX_SWEEPS);
  const resend = stalled.filter((item) => item.sweeps < MAX_SWEEPS);
  for (const item of exhausted) await failForGood(env, database, item.transId, item.index);
  for (let start = 0; start < resend.length; start += MAX_MESSAGES_PER_SEND) {
    const chunk = resend.slice(start, start + MAX_MESSAGES_PER_SEND);
    // Each to its kind's queue, sent before it is counted: a crash in between costs one more re-send at most, never
    // a lost item.
    await sendInsertMessages(env, chunk);
    await recordSweep(db, chunk);
  }
  // A job whose step message was lost or dead-lettered goes on from its progress in D1, unless it keeps stalling.
  const jobs = await recoverStalledJobs(env, 'catalog', db, before);
  const stale = { rewritten: 0, failed: 0 };
  for (const record of await staleVectorsLeft(db, STALE_PER_RUN, now)) {
    await rewriteStaleVectors(env, database, record).then(
      () => stale.rewritten++,
      async (error: unknown) => {
        console.error(JSON.stringify({ event: 'stale_vectors_rewrite_failed', appId: record.appId, imageId: record.imageId, error: String(error) }));
        await staleVectorsFailed(db, record.attempt, now);
        stale.failed++;
      },
    );
  }
  // After the rewrites: a retired version's vectors are deleted once no rewrite may bring them back.
  const retired = { deleted: 0, failed: 0 };
  for (let run = 0; run < RETIRED_RUNS; run++) {
    const batch = await deleteRetiredVersions(env, db, now);
    retired.deleted += batch.deleted;
    retired.failed += batch.failed;
    // A failure ends this run's deletions: the rest of its batch went, the failed versions wait, the next run goes on.
    if (batch.deleted === 0 || batch.failed > 0) break;
  }
  await deleteSettledStaged(env, database);
  const queryImages = await deleteExpiredQueryImages(db, env.BLOBS, now);
  // After the staged files are released: a transaction whose files are still staged is kept.
  const kept = formatTimestamp(new Date(now.getTime() - insertStatusRetentionHours(env) * 3_600_000));
  const transactions = await deleteFinishedTransactions(db, kept, TRANSACTIONS_PER_RUN);
  return { resent: resend.length, failed: exhausted.length, jobs, staleRewritten: stale.rewritten, staleFailed: stale.failed, retired: retired.deleted, retiredFailed: retired.failed, queryImages, transactions };
}
