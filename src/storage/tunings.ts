import type { Env } from '../env';
import { formatTimestamp } from '../time';
import { forgetApp, type AppRecord } from './apps';
import { catalogDatabase } from './databases';
import { jobProgressOf, LAST_PENDING_SEQ, pendingInsertsUpTo, type JobProgress, type JobProgressRow } from './jobs';

/**
 * An application's tuning on a label field (migrations/0019, ingest/tuning.ts): `fitting`, `projecting` and
 * `evaluating` while it is made; `done` (applied or not); `retiring` while a tuning's vectors are deleted (untuned,
 * not applied, cancelled or failed); `failed`.
 */
export type TuningState = 'fitting' | 'projecting' | 'evaluating' | 'retiring' | 'done' | 'failed';
export type TuningApply = 'better' | 'always';
export type Tuning = JobProgress & {
  appId: string;
  version: number;
  labelField: string;
  apply: TuningApply;
  state: TuningState;
  /** The labels fitted, the most frequent first. */
  classes: string[];
  /** Images with a value of the field when it began. */
  labelled: number;
  cursor: number;
  phaseSeq: number;
  notBefore: string | null;
  fitted: number;
  queries: number;
  hitsBefore: number;
  hitsAfter: number;
  /** Whether the application moved to it; null until decided. */
  applied: boolean | null;
  /** Why it failed (kept while its vectors are retired), or null. */
  failure: string | null;
};

type TuningRow = JobProgressRow & {
  app_id: string;
  version: number;
  label_field: string;
  apply: TuningApply;
  state: TuningState;
  classes: string;
  labelled: number;
  cursor: number;
  phase_seq: number;
  not_before: string | null;
  fitted: number;
  queries: number;
  hits_before: number;
  hits_after: number;
  applied: number | null;
  failure: string | null;
};

const toTuning = (row: TuningRow): Tuning => ({
  appId: row.app_id,
  version: row.version,
  labelField: row.label_field,
  apply: row.apply,
  state: row.state,
  classes: JSON.parse(row.classes) as string[],
  labelled: row.labelled,
  cursor: row.cursor,
  phaseSeq: row.phase_seq,
  notBefore: row.not_before,
  fitted: row.fitted,
  queries: row.queries,
  hitsBefore: row.hits_before,
  hitsAfter: row.hits_after,
  applied: row.applied === null ? null : row.applied === 1,
  failure: row.failure,
  ...jobProgressOf(row),
});

/** The states in which a tuning is under way: another is refused, and a reindex too. */
export const TUNING_UNDER_WAY: readonly TuningState[] = ['fitting', 'projecting', 'evaluating', 'retiring'];
const UNDER_WAY_SQL = `('fitting', 'projecting', 'evaluating', 'retiring')`;

/** An image's value of the label field as SQL (?2 the field's name): json_each matches the name as it is, with no path to escape. */
const LABEL_OF = `(SELECT CAST(value AS TEXT) FROM json_each(images.metadata) WHERE key = ?2 AND type != 'null')`;

export async function getTuning(db: D1Database, appId: string): Promise<Tuning | null> {
  const row = await db.prepare('SELECT * FROM tunings WHERE app_id = ?').bind(appId).first<TuningRow>();
  return row ? toTuning(row) : null;
}

/** How the application's images are labelled by `field`: how many have a value, and each value's count (most frequent first, at most `limit`). */
export async function labelCounts(db: D1Database, appId: string, field: string, limit: number): Promise<{ labelled: number; labels: { label: string; count: number }[] }> {
  const [total, counts] = await db.batch<{ n: number } | { label: string; n: number }>([
    db.prepare(`SELECT COUNT(*) AS n FROM images WHERE app_id = ?1 AND ${LABEL_OF} != ''`).bind(appId, field),
    db
      .prepare(`SELECT label, COUNT(*) AS n FROM (SELECT ${LABEL_OF} AS label FROM images WHERE app_id = ?1) WHERE label != '' GROUP BY label ORDER BY n DESC, label LIMIT ?3`)
      .bind(appId, field, limit),
  ]);
  const labelled = (total!.results[0] as { n: number } | undefined)?.n ?? 0;
  return { labelled, labels: (counts!.results as { label: string; n: number }[]).map(({ label, n }) => ({ label, count: n })) };
}

/**
 * Begins a tuning of the application, version one past its last: null when one is under way (or a reindex is). An
 * application tuned already is untuned first, and the new tuning's vectors wait `ttlMs` before they are written over
 * the old ones, so that no isolate's cached copy of the application searches them mixed. The application is in the
 * control database, the tuning in its catalog's: untuning first is safe, since an application tuned has neither a
 * tuning nor a reindex under way (each begins only on an untuned one), so the start that follows is refused only by
 * a start of the same moment, which untunes it too.
 */
export async function startTuning(
  env: Env,
  app: Pick<AppRecord, 'id' | 'database' | 'tuning'>,
  tuning: { labelField: string; apply: TuningApply; classes: string[]; labelled: number },
  ttlMs: number,
): Promise<Tuning | null> {
  const appId = app.id;
  const db = catalogDatabase(env, app);
  const now = formatTimestamp();
  const notBefore = formatTimestamp(new Date(Date.now() + ttlMs));
  if (app.tuning !== null) {
    await env.DB.prepare('UPDATE apps SET tuning = NULL WHERE id = ?').bind(appId).run();
    forgetApp(appId);
  }
  const row = await db
    .prepare(
      `INSERT INTO tunings (app_id, version, label_field, apply, state, classes, labelled, not_before, started_at, updated_at)
       SELECT ?1, 1, ?2, ?3, 'fitting', ?4, ?5, CASE WHEN ?8 THEN NULL ELSE ?7 END, ?6, ?6
       WHERE NOT EXISTS (SELECT 1 FROM reindexes WHERE app_id = ?1 AND state IN ('embedding', 'retiring'))
       ON CONFLICT (app_id) DO UPDATE SET
         version = tunings.version + 1, label_field = excluded.label_field, apply = excluded.apply, state = 'fitting',
         classes = excluded.classes, labelled = excluded.labelled, cursor = 0, phase_seq = 0, not_before = excluded.not_before,
         fitted = 0, queries = 0, hits_before = 0, hits_after = 0, applied = NULL, failure = NULL, step = tunings.step + 1, resumes = 0,
         error = NULL, started_at = excluded.started_at, updated_at = excluded.updated_at, finished_at = NULL
       WHERE tunings.state NOT IN ${UNDER_WAY_SQL}
       RETURNING *`,
    )
    .bind(appId, tuning.labelField, tuning.apply, JSON.stringify(tuning.classes), tuning.labelled, now, notBefore, app.tuning === null ? 1 : 0)
    .first<TuningRow>();
  return row ? toTuning(row) : null;
}

/**
 * Moves the application back to its untuned vectors and has the tuning's deleted after `ttlMs` (isolates' cached copies
 * of the application expire first): a tuning applied, or one under way, which stops. The retire pass's step number, or
 * null when there is nothing to untune. The application (control database) is untuned before the tuning (its catalog's)
 * retires: a failure in between leaves tuned vectors no search reads, retired by untuning again.
 */
export async function untune(env: Env, app: { id: string; database: string }, ttlMs: number): Promise<number | null> {
  const appId = app.id;
  const now = formatTimestamp();
  await env.DB.prepare('UPDATE apps SET tuning = NULL WHERE id = ?').bind(appId).run();
  forgetApp(appId);
  const retiring = await catalogDatabase(env, app)
    .prepare(
      `UPDATE tunings SET state = 'retiring', cursor = 0, phase_seq = ${LAST_PENDING_SEQ}, not_before = ?3, applied = 0,
         step = step + 1, resumes = 0, updated_at = ?2
       WHERE app_id = ?1 AND (state IN ('fitting', 'projecting', 'evaluating') OR (state = 'done' AND applied = 1))
       RETURNING step`,
    )
    .bind(appId, now, formatTimestamp(new Date(Date.now() + ttlMs)))
    .first<{ step: number }>();
  // Again: an evaluation that applied the tuning between the two (decideTuning) is undone.
  await env.DB.prepare('UPDATE apps SET tuning = NULL WHERE id = ?').bind(appId).run();
  forgetApp(appId);
  return retiring?.step ?? null;
}

/** The changes a step makes besides moving on: its progress, a new phase (its pending items recorded), counts added. */
export type TuningChange = {
  cursor?: number;
  state?: TuningState;
  /** The phase begun waits for the items pending now. */
  newPhase?: boolean;
  fitted?: number;
  queries?: number;
  hitsBefore?: number;
  hitsAfter?: number;
  error?: string;
};

/** Ends step `step` of the tuning with `change`: the next step's number, or null when another chain superseded this one. */
export async function advanceTuning(db: D1Database, tuning: Pick<Tuning, 'appId' | 'step' | 'state'>, change: TuningChange = {}): Promise<number | null> {
  const ended = change.state === 'done' || change.state === 'failed';
  const row = await db
    .prepare(
      `UPDATE tunings SET step = step + 1, resumes = 0, error = ?10, updated_at = ?4,
         cursor = COALESCE(?5, cursor), state = COALESCE(?6, state),
         phase_seq = CASE WHEN ?7 THEN ${LAST_PENDING_SEQ} ELSE phase_seq END,
         fitted = fitted + ?8, queries = queries + ?9, hits_before = hits_before + ?11, hits_after = hits_after + ?12,
         finished_at = CASE WHEN ?13 THEN ?4 ELSE finished_at END
       WHERE app_id = ?1 AND step = ?2 AND state = ?3 RETURNING step`,
    )
    .bind(
      tuning.appId,
      tuning.step,
      tuning.state,
      formatTimestamp(),
      change.cursor ?? null,
      change.state ?? null,
      change.newPhase ? 1 : 0,
      change.fitted ?? 0,
      change.queries ?? 0,
      change.error ?? null,
      change.hitsBefore ?? 0,
      change.hitsAfter ?? 0,
      ended ? 1 : 0,
    )
    .first<{ step: number }>();
  return row?.step ?? null;
}

/**
 * Ends the evaluation: the application moves to the tuning at once (`apply`), once the tuning is marked done, or the
 * tuning is not applied and its vectors are retired. Whether this step still owned the tuning. The tuning (catalog
 * database) is marked before the application (control database) moves: only a step that owned it moves it, and a
 * failure in between leaves the application untuned, as if the tuning were not applied.
 */
export async function decideTuning(env: Env, app: { id: string; database: string }, tuning: Tuning, apply: boolean, ttlMs: number): Promise<number | null> {
  const db = catalogDatabase(env, app);
  const now = formatTimestamp();
  if (apply) {
    const done = await db
      .prepare(`UPDATE tunings SET state = 'done', applied = 1, step = step + 1, updated_at = ?2, finished_at = ?2 WHERE app_id = ?1 AND state = 'evaluating' AND step = ?3`)
      .bind(tuning.appId, now, tuning.step)
      .run();
    if (!done.meta.changes) return null;
    await env.DB.prepare('UPDATE apps SET tuning = ? WHERE id = ?').bind(tuning.version, tuning.appId).run();
    // An untune that came between (it retires the tuning between two untunings of the application) is undone here.
    const applied = await db.prepare(`SELECT 1 FROM tunings WHERE app_id = ? AND state = 'done' AND applied = 1 AND version = ?`).bind(tuning.appId, tuning.version).first();
    if (!applied) await env.DB.prepare('UPDATE apps SET tuning = NULL WHERE id = ? AND tuning = ?').bind(tuning.appId, tuning.version).run();
    forgetApp(tuning.appId);
    return tuning.step + 1;
  }
  const row = await db
    .prepare(
      `UPDATE tunings SET state = 'retiring', applied = 0, cursor = 0, phase_seq = ${LAST_PENDING_SEQ}, not_before = ?4, step = step + 1, updated_at = ?2
       WHERE app_id = ?1 AND state = 'evaluating' AND step = ?3 RETURNING step`,
    )
    .bind(tuning.appId, now, tuning.step, formatTimestamp(new Date(Date.now() + ttlMs)))
    .first<{ step: number }>();
  return row?.step ?? null;
}

/** Fails a tuning being made: its vectors are retired (the outcome then `failed`, with `error`). The retire pass's step. */
export async function failTuning(db: D1Database, appId: string, error: string): Promise<number | null> {
  const row = await db
    .prepare(
      `UPDATE tunings SET state = 'retiring', applied = 0, failure = ?2, error = NULL, cursor = 0, phase_seq = ${LAST_PENDING_SEQ}, step = step + 1, updated_at = ?3
       WHERE app_id = ?1 AND state IN ('fitting', 'projecting', 'evaluating') RETURNING step`,
    )
    .bind(appId, error, formatTimestamp())
    .first<{ step: number }>();
  return row?.step ?? null;
}

/** Ends the retire pass: `done`, or `failed` when a failure sent it there. */
export async function endRetiring(db: D1Database, tuning: Pick<Tuning, 'appId' | 'step'>): Promise<void> {
  const now = formatTimestamp();
  await db
    .prepare(
      `UPDATE tunings SET state = CASE WHEN failure IS NULL THEN 'done' ELSE 'failed' END, step = step + 1, updated_at = ?2, finished_at = ?2
       WHERE app_id = ?1 AND state = 'retiring' AND step = ?3`,
    )
    .bind(tuning.appId, now, tuning.step)
    .run();
}

/** Whether inserts accepted before the tuning's phase began are still pending: they may have read the targets of before. */
export async function earlierInsertsPending(db: D1Database, tuning: Pick<Tuning, 'appId' | 'phaseSeq'>): Promise<boolean> {
  const row = await db
    .prepare(`SELECT EXISTS (${pendingInsertsUpTo('?2')}) OR EXISTS (SELECT 1 FROM stale_vector_metadata WHERE app_id = ?1) AS pending`)
    .bind(tuning.appId, tuning.phaseSeq)
    .first<{ pending: number }>();
  return row?.pending === 1;
}

/** An image as a tuning's steps read it: its label (null without one), how many object vectors it has, when it was applied. */
export type TuningImage = { id: number; im_name: string; object_count: number; label: string | null; /** Milliseconds since the epoch. */ updated_at: number };

/** The application's images after `cursor`, in id order, with their value of `field`. */
export async function imagesForTuning(db: D1Database, appId: string, field: string, cursor: number, limit: number): Promise<TuningImage[]> {
  const { results } = await db
    .prepare(`SELECT id, im_name, object_count, updated_at, ${LABEL_OF} AS label FROM images WHERE app_id = ?1 AND id > ?3 ORDER BY id LIMIT ?4`)
    .bind(appId, field, cursor, limit)
    .all<TuningImage>();
  return results;
}

/** The labels of some of the application's images, by id. */
export async function labelsOf(db: D1Database, appId: string, field: string, ids: number[]): Promise<Map<number, string | null>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    .prepare(`SELECT images.id AS id, ${LABEL_OF} AS label FROM json_each(?3) AS wanted CROSS JOIN images ON images.id = wanted.value WHERE images.app_id = ?1`)
    .bind(appId, field, JSON.stringify(ids))
    .all<{ id: number; label: string | null }>();
  return new Map(results.map((row) => [row.id, row.label]));
}

/** Makes a new chain of steps the tuning's (the sweeper found it stalled): its step number, or null when none is under way. */
export async function resumeTuning(db: D1Database, appId: string): Promise<number | null> {
  const row = await db
    .prepare(`UPDATE tunings SET step = step + 1, resumes = resumes + 1, updated_at = ?2 WHERE app_id = ?1 AND state IN ${UNDER_WAY_SQL} RETURNING step`)
    .bind(appId, formatTimestamp())
    .first<{ step: number }>();
  return row?.step ?? null;
}

/** Keeps the error of a step that will be tried again, for the tuning's status. */
export async function noteTuningError(db: D1Database, appId: string, error: string): Promise<void> {
  await db.prepare('UPDATE tunings SET error = ? WHERE app_id = ?').bind(error, appId).run();
}

/** Tunings under way that have not moved since `before`: their message was lost or keeps failing. */
export async function stalledTunings(db: D1Database, before: string): Promise<Tuning[]> {
  const { results } = await db.prepare(`SELECT * FROM tunings WHERE state IN ${UNDER_WAY_SQL} AND updated_at < ?`).bind(before).all<TuningRow>();
  return results.map(toTuning);
}
