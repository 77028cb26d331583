import type { DetectVocabulary } from '@edge-image-search/contract/wire';
import type { Env } from '../env';
import { formatTimestamp } from '../time';
import { forgetApp, productTypesOf, vocabularyOf, type AppRecord } from './apps';
import { catalogDatabase } from './databases';
import { jobProgressOf, LAST_PENDING_SEQ, pendingInsertsUpTo, type JobProgress, type JobProgressRow } from './jobs';
import { embedModelNumber, registerEmbedModel } from './model-numbers';

/**
 * An application's re-embedding into another embedding model (migrations/0012, ingest/reindex.ts): `embedding` while
 * its images are re-embedded and searches still use `fromModel`; `retiring` once it is on `toModel` and its vectors
 * in every other model are deleted; `done`; or `failed`, the application still on `fromModel`.
 */
export type ReindexState = 'embedding' | 'retiring' | 'done' | 'failed';
export type Reindex = JobProgress & {
  appId: string;
  fromModel: string;
  toModel: string;
  /** The last item number the application had taken when the reindex began. */
  fromSeq: number;
  /** The last item number of the application pending when it switched (migrations/0014); null before. */
  switchSeq: number | null;
  state: ReindexState;
  retireCursor: number;
};

type ReindexRow = JobProgressRow & {
  app_id: string;
  from_model: string;
  to_model: string;
  from_seq: number;
  switch_seq: number | null;
  state: ReindexState;
  retire_cursor: number;
};

const toReindex = (row: ReindexRow): Reindex => ({
  appId: row.app_id,
  fromModel: row.from_model,
  toModel: row.to_model,
  fromSeq: row.from_seq,
  switchSeq: row.switch_seq,
  state: row.state,
  retireCursor: row.retire_cursor,
  ...jobProgressOf(row),
});

/** Whether a reindex is under way (embedding or retiring): another job of the application waits for it. */
export const reindexUnderWay = (reindex: Reindex | null): reindex is Reindex => reindex?.state === 'embedding' || reindex?.state === 'retiring';

export async function getReindex(db: D1Database, appId: string): Promise<Reindex | null> {
  const row = await db.prepare('SELECT * FROM reindexes WHERE app_id = ?').bind(appId).first<ReindexRow>();
  return row ? toReindex(row) : null;
}

/**
 * Begins re-embedding an application from the model it is on into `toModel`: the reindex begun, or null when the
 * application is on that model already or a reindex of it is under way (embedding or retiring). A failed one into
 * the same model resumes where it stopped.
 */
export async function startReindex(db: D1Database, app: Pick<AppRecord, 'id' | 'embedModel' | 'tuning'>, toModel: string): Promise<Reindex | null> {
  // The application's model and tuning were read from the control database just before: its tuning changes only with
  // a tuning under way, which this statement checks, in the database of the reindex.
  if (app.embedModel === toModel || app.tuning !== null) return null;
  const now = formatTimestamp();
  const row = await db
    .prepare(
      `INSERT INTO reindexes (app_id, from_model, to_model, from_seq, state, started_at, updated_at)
       SELECT ?1, ?4, ?2, ${LAST_PENDING_SEQ}, 'embedding', ?3, ?3
       WHERE NOT EXISTS (SELECT 1 FROM tunings WHERE app_id = ?1 AND state IN ('fitting', 'projecting', 'evaluating', 'retiring'))
       ON CONFLICT (app_id) DO UPDATE SET
         from_model = excluded.from_model, to_model = excluded.to_model, from_seq = excluded.from_seq, state = 'embedding',
         retire_cursor = 0, step = reindexes.step + 1, resumes = 0, error = NULL, started_at = excluded.started_at,
         updated_at = excluded.updated_at, finished_at = NULL
       WHERE reindexes.state IN ('done', 'failed')
       RETURNING *`,
    )
    .bind(app.id, toModel, now, app.embedModel)
    .first<ReindexRow>();
  return row ? toReindex(row) : null;
}

/**
 * Makes a new chain of steps the reindex's, superseding any other (the admin API asked again, or the sweeper found it
 * stalled, `sweep` then counting one more resume): the step number its message must carry, or null when none is under way.
 */
export async function resumeReindex(db: D1Database, appId: string, sweep = false): Promise<number | null> {
  const row = await db
    .prepare(
      `UPDATE reindexes SET step = step + 1, resumes = resumes + ?2, updated_at = ?3
       WHERE app_id = ?1 AND state IN ('embedding', 'retiring') RETURNING step`,
    )
    .bind(appId, sweep ? 1 : 0, formatTimestamp())
    .first<{ step: number }>();
  return row?.step ?? null;
}

/** What a new version of an application's images is made for (writeTargets). */
export type WriteTargets = {
  /** The models it must be written in: the application's own, and the one a reindex moves it to. */
  models: string[];
  /** The vocabulary its objects are detected with (the application's own types; absent: the defaults). */
  vocabulary: DetectVocabulary | undefined;
  /** The tuning whose projected vectors it must have too: the one applied, or the one being made (ingest/tuning.ts). */
  tuning: number | null;
};

export async function writeTargets(env: Env, app: { id: string; database: string }): Promise<WriteTargets> {
  // The application's model and types are in the control database, its jobs in its catalog's: read side by side.
  const [row, jobs] = await Promise.all([
    env.DB.prepare('SELECT embed_model, product_types, tuning FROM apps WHERE id = ?')
      .bind(app.id)
      .first<{ embed_model: string; product_types: string | null; tuning: number | null }>(),
    catalogDatabase(env, app)
      .prepare(
        `SELECT (SELECT to_model FROM reindexes WHERE app_id = ?1 AND state = 'embedding') AS to_model,
           (SELECT version FROM tunings WHERE app_id = ?1 AND state IN ('projecting', 'evaluating')) AS tuning`,
      )
      .bind(app.id)
      .first<{ to_model: string | null; tuning: number | null }>(),
  ]);
  if (!row) throw new Error(`No application ${app.id}`);
  const toModel = jobs?.to_model ?? null;
  const models = toModel === null || toModel === row.embed_model ? [row.embed_model] : [row.embed_model, toModel];
  return { models, vocabulary: vocabularyOf({ productTypes: productTypesOf(row.product_types) }), tuning: row.tuning ?? jobs?.tuning ?? null };
}

/** An image whose vectors are not yet in the reindex's model. */
export type ImageToReembed = { id: number; blob_key: string; metadata: string; object_count: number };

export async function imagesToReembed(db: D1Database, appId: string, toModel: string, limit: number): Promise<ImageToReembed[]> {
  const { results } = await db
    // Two ranges of the (app_id, model, id) index rather than `!=`, which would sort the whole application.
    .prepare(
      `SELECT id, blob_key, metadata, object_count FROM (
         SELECT * FROM (SELECT id, blob_key, metadata, object_count FROM images WHERE app_id = ?1 AND model < ${embedModelNumber('?2')} ORDER BY model, id LIMIT ?3)
         UNION ALL
         SELECT * FROM (SELECT id, blob_key, metadata, object_count FROM images WHERE app_id = ?1 AND model > ${embedModelNumber('?2')} ORDER BY model, id LIMIT ?3))
       LIMIT ?3`,
    )
    .bind(appId, toModel, limit)
    .all<ImageToReembed>();
  return results;
}

/**
 * Records that an image's vectors are in `model`, unless its metadata changed since it was read (its vectors were
 * then written with the old metadata: the next pass embeds it again) or it was retired meanwhile. Whether it did.
 */
export async function markReembedded(db: D1Database, image: ImageToReembed, model: string): Promise<boolean> {
  const [, result] = await db.batch([
    registerEmbedModel(db, model),
    db.prepare(`UPDATE images SET model = ${embedModelNumber('?1')} WHERE id = ?2 AND metadata = ?3`).bind(model, image.id, image.metadata),
  ]);
  return (result?.meta.changes ?? 0) > 0;
}

/**
 * Moves the application onto the reindex's model, in one D1 batch, once every image of it is in that model and no
 * image item accepted before the reindex is still pending (its consumer may have written the old model only; those
 * accepted later write both, ingest/insert-item.ts). Whether it moved.
 */
export async function switchToNewModel(env: Env, app: { id: string; database: string }, reindex: Reindex): Promise<boolean> {
  const db = catalogDatabase(env, app);
  // The application is in the control database, its images and the reindex in its catalog's: checked there first. No
  // image goes back to the old model meanwhile (versions accepted since the reindex began are written in the new one
  // too), and a crash after the move leaves the reindex embedding, whose next step finds nothing to embed and comes
  // here again: the move is then made already, and the reindex turns retiring.
  const ready = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM reindexes WHERE app_id = ?1 AND state = 'embedding' AND step = ?5)
         AND NOT EXISTS (${pendingInsertsUpTo('?4')})
         AND NOT EXISTS (SELECT 1 FROM images WHERE app_id = ?1 AND model < ${embedModelNumber('?2')})
         AND NOT EXISTS (SELECT 1 FROM images WHERE app_id = ?1 AND model > ${embedModelNumber('?2')}) AS ready`,
    )
    .bind(reindex.appId, reindex.toModel, reindex.fromModel, reindex.fromSeq, reindex.step)
    .first<number>('ready');
  if (!ready) return false;
  const moved = await env.DB.prepare('UPDATE apps SET embed_model = ?2 WHERE id = ?1 AND embed_model IN (?2, ?3) RETURNING id')
    .bind(reindex.appId, reindex.toModel, reindex.fromModel)
    .first();
  forgetApp(reindex.appId);
  if (!moved) return false;
  const retiring = await db
    .prepare(
      `UPDATE reindexes SET state = 'retiring', switch_seq = ${LAST_PENDING_SEQ}, step = step + 1, resumes = 0, error = NULL, updated_at = ?2
       WHERE app_id = ?1 AND state = 'embedding' AND step = ?3`,
    )
    .bind(reindex.appId, formatTimestamp(), reindex.step)
    .run();
  return retiring.meta.changes > 0;
}

/**
 * Whether a write that may have read the old model is still under way: an insert accepted before the reindex's
 * switch, still pending, or a metadata update's rewrite of vectors (storage/stale-vectors.ts). Behind the retire
 * pass it would leave the old model's vectors there, so the pass waits for it.
 */
export async function oldModelWritesPending(db: D1Database, reindex: Reindex): Promise<boolean> {
  const row = await db
    .prepare(`SELECT EXISTS (${pendingInsertsUpTo('?2')}) OR EXISTS (SELECT 1 FROM stale_vector_metadata WHERE app_id = ?1) AS pending`)
    .bind(reindex.appId, reindex.switchSeq)
    .first<{ pending: number }>();
  return row?.pending === 1;
}

/**
 * Images of the application in `model` (after the switch: all of them) after `cursor`, in id order: their vectors in
 * every other model are deleted next.
 */
export async function imagesAfter(db: D1Database, appId: string, model: string, cursor: number, limit: number): Promise<{ id: number; object_count: number }[]> {
  const { results } = await db
    .prepare(`SELECT id, object_count FROM images WHERE app_id = ?1 AND model = ${embedModelNumber('?2')} AND id > ?3 ORDER BY id LIMIT ?4`)
    .bind(appId, model, cursor, limit)
    .all<{ id: number; object_count: number }>();
  return results;
}

/**
 * Ends step `step` of the reindex in state `state`: the next step's number, or null when another chain superseded
 * this one (or it ended meanwhile). Progress resets the resumes and the last error.
 */
export async function advanceReindex(
  db: D1Database,
  reindex: Pick<Reindex, 'appId' | 'step' | 'state'>,
  change: { retireCursor?: number; done?: boolean } = {},
): Promise<number | null> {
  const row = await db
    .prepare(
      `UPDATE reindexes SET step = step + 1, resumes = 0, error = NULL, updated_at = ?4,
         retire_cursor = COALESCE(?5, retire_cursor),
         state = CASE WHEN ?6 THEN 'done' ELSE state END, finished_at = CASE WHEN ?6 THEN ?4 ELSE finished_at END
       WHERE app_id = ?1 AND step = ?2 AND state = ?3 RETURNING step`,
    )
    .bind(reindex.appId, reindex.step, reindex.state, formatTimestamp(), change.retireCursor ?? null, change.done ? 1 : 0)
    .first<{ step: number }>();
  return row?.step ?? null;
}

/** Fails a reindex still embedding: the application stays on its model until it is asked again. */
export async function failReindex(db: D1Database, appId: string, error: string): Promise<void> {
  const now = formatTimestamp();
  await db
    .prepare(`UPDATE reindexes SET state = 'failed', error = ?2, updated_at = ?3, finished_at = ?3 WHERE app_id = ?1 AND state = 'embedding'`)
    .bind(appId, error, now)
    .run();
}

/** Keeps the error of a step that will be tried again, for the reindex's status and its failure if it never moves. */
export async function noteReindexError(db: D1Database, appId: string, error: string): Promise<void> {
  await db.prepare('UPDATE reindexes SET error = ? WHERE app_id = ?').bind(error, appId).run();
}

/** The images of the application and how many of them are in `model`. */
export async function imagesInModel(db: D1Database, appId: string, model: string): Promise<{ total: number; inModel: number }> {
  const row = await db
    .prepare(`SELECT COUNT(*) AS total, COALESCE(SUM(model = ${embedModelNumber('?2')}), 0) AS in_model FROM images WHERE app_id = ?1`)
    .bind(appId, model)
    .first<{ total: number; in_model: number }>();
  return { total: row?.total ?? 0, inModel: row?.in_model ?? 0 };
}

/** Reindexes under way that have not moved since `before`: their message was lost or keeps failing. */
export async function stalledReindexes(db: D1Database, before: string): Promise<Reindex[]> {
  const { results } = await db
    .prepare(`SELECT * FROM reindexes WHERE state IN ('embedding', 'retiring') AND updated_at < ?`)
    .bind(before)
    .all<ReindexRow>();
  return results.map(toReindex);
}
