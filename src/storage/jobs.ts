/**
 * What the admin jobs' rows share (a reindex, a tuning: ingest/job-step.ts): their progress as steps, and the insert
 * items a phase waits for: those accepted before it began may have read the application's write targets of before
 * (storage/reindexes.ts, writeTargets), so the job lets them apply first.
 */

/** A job's progress, the same columns in each job's table. */
export type JobProgress = {
  /** The number the next step's message must carry: one of a superseded chain carries an older one and stops. */
  step: number;
  /** Sweeps that found it stalled since it last moved. */
  resumes: number;
  /** Why it failed, or the last step's error while it runs. */
  error: string | null;
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
};

export type JobProgressRow = { step: number; resumes: number; error: string | null; started_at: string; updated_at: string; finished_at: string | null };

export const jobProgressOf = (row: JobProgressRow): JobProgress => ({
  step: row.step,
  resumes: row.resumes,
  error: row.error,
  startedAt: row.started_at,
  updatedAt: row.updated_at,
  finishedAt: row.finished_at,
});

/** The last item number of application ?1 still pending, as SQL: recorded when a phase begins. */
export const LAST_PENDING_SEQ = `(SELECT COALESCE(MAX(i.seq), 0) FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
  WHERE t.app_id = ?1 AND i.state = 'pending')`;

/** Pending image items of application ?1 numbered up to `seq` (SQL): inserts that may have read its targets before a phase began. */
export const pendingInsertsUpTo = (seq: string): string =>
  `SELECT 1 FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
   WHERE t.app_id = ?1 AND i.state = 'pending' AND i.kind = 'image' AND i.seq <= ${seq}`;
