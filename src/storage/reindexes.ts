import { formatTimestamp } from '../time';

/**
 * An application's re-embedding into another embedding model (migrations/0012, ingest/reindex.ts): `embedding` while
 * its images are re-embedded and searches still use `fromModel`; `retiring` once it is on `toModel` and the old
 * model's vectors of it are deleted; `done`; or `failed`, the application still on `fromModel`.
 */
export type ReindexState = 'embedding' | 'retiring' | 'done' | 'failed';
export type Reindex = {
  appId: string;
  fromModel: string;
  toModel: string;
  /** The last item number the application had taken when the reindex began. */
  fromSeq: number;
  state: ReindexState;
  retireCursor: number;
  error: string | null;
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
};

type ReindexRow = {
  app_id: string;
  from_model: string;
  to_model: string;
  from_seq: number;
  state: ReindexState;
  retire_cursor: number;
  error: string | null;
  started_at: string;
  updated_at: string;
  finished_at: string | null;
};

const toReindex = (row: ReindexRow): Reindex => ({
  appId: row.app_id,
  fromModel: row.from_model,
  toModel: row.to_model,
  fromSeq: row.from_seq,
  state: row.state,
  retireCursor: row.retire_cursor,
  error: row.error,
  startedAt: row.started_at,
  updatedAt: row.updated_at,
  finishedAt: row.finished_at,
});

export async function getReindex(db: D1Database, appId: string): Promise<Reindex | null> {
  const row = await db.prepare('SELECT * FROM reindexes WHERE app_id = ?').bind(appId).first<ReindexRow>();
  return row ? toReindex(row) : null;
}

/**
 * Begins re-embedding an application from the model it is on into `toModel`, unless a reindex of it is under way
 * (embedding or retiring): then nothing changes. A failed one into the same model resumes where it stopped.
 */
export async function startReindex(db: D1Database, appId: string, toModel: string): Promise<void> {
  const now = formatTimestamp();
  await db
    .prepare(
      `INSERT INTO reindexes (app_id, from_model, to_model, from_seq, state, started_at, updated_at)
       SELECT a.id, a.embed_model, ?2,
         (SELECT COALESCE(MAX(i.seq), 0) FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id WHERE t.app_id = a.id),
         'embedding', ?3, ?3
       FROM apps a WHERE a.id = ?1
       ON CONFLICT (app_id) DO UPDATE SET
         from_model = excluded.from_model, to_model = excluded.to_model, from_seq = excluded.from_seq, state = 'embedding',
         retire_cursor = 0, error = NULL, started_at = excluded.started_at, updated_at = excluded.updated_at, finished_at = NULL
       WHERE reindexes.state IN ('done', 'failed')`,
    )
    .bind(appId, toModel, now)
    .run();
}

/** The models a new version of the application's images must be written in: its own, and the one it is moving to. */
export async function embedModelsToWrite(db: D1Database, appId: string): Promise<string[]> {
  const row = await db
    .prepare(
      `SELECT a.embed_model, r.to_model FROM apps a LEFT JOIN reindexes r ON r.app_id = a.id AND r.state = 'embedding' WHERE a.id = ?`,
    )
    .bind(appId)
    .first<{ embed_model: string; to_model: string | null }>();
  if (!row) throw new Error(`No application ${appId}`);
  return row.to_model === null || row.to_model === row.embed_model ? [row.embed_model] : [row.embed_model, row.to_model];
}

/** An image whose vectors are not yet in the reindex's model. */
export type ImageToReembed = { id: number; blob_key: string; metadata: string; object_count: number };

export async function imagesToReembed(db: D1Database, appId: string, toModel: string, limit: number): Promise<ImageToReembed[]> {
  const { results } = await db
    .prepare('SELECT id, blob_key, metadata, object_count FROM images WHERE app_id = ? AND embed_model != ? ORDER BY id LIMIT ?')
    .bind(appId, toModel, limit)
    .all<ImageToReembed>();
  return results;
}

/**
 * Records that an image's vectors are in `model`, unless its metadata changed since it was read (its vectors were
 * then written with the old metadata: the next pass embeds it again).
 */
export async function markReembedded(db: D1Database, image: ImageToReembed, model: string): Promise<void> {
  await db.prepare('UPDATE images SET embed_model = ? WHERE id = ? AND metadata = ?').bind(model, image.id, image.metadata).run();
}

/**
 * Moves the application onto the reindex's model, in one D1 batch, once every image of it is in that model and no
 * image item accepted before the reindex is still pending (its consumer may have written the old model only; those
 * accepted later write both, ingest/consumer.ts). Whether it moved.
 */
export async function switchToNewModel(db: D1Database, reindex: Reindex): Promise<boolean> {
  const now = formatTimestamp();
  const [, moved] = await db.batch([
    db
      .prepare(
        `UPDATE apps SET embed_model = ?2 WHERE id = ?1 AND embed_model = ?3
           AND NOT EXISTS (SELECT 1 FROM images WHERE app_id = ?1 AND embed_model != ?2)
           AND NOT EXISTS (
             SELECT 1 FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
             WHERE t.app_id = ?1 AND i.state = 'pending' AND i.kind = 'image' AND i.seq <= ?4)`,
      )
      .bind(reindex.appId, reindex.toModel, reindex.fromModel, reindex.fromSeq),
    db
      .prepare(
        `UPDATE reindexes SET state = 'retiring', updated_at = ?3
         WHERE app_id = ?1 AND state = 'embedding' AND (SELECT embed_model FROM apps WHERE id = ?1) = ?2`,
      )
      .bind(reindex.appId, reindex.toModel, now),
  ]);
  return (moved?.meta.changes ?? 0) > 0;
}

/** Images of the application after `cursor`, in id order: the old model's vectors of them are deleted next. */
export async function imagesAfter(db: D1Database, appId: string, cursor: number, limit: number): Promise<{ id: number; object_count: number }[]> {
  const { results } = await db
    .prepare('SELECT id, object_count FROM images WHERE app_id = ? AND id > ? ORDER BY id LIMIT ?')
    .bind(appId, cursor, limit)
    .all<{ id: number; object_count: number }>();
  return results;
}

/** Progress: a reindex that moves is touched, so that the sweeper can tell a stalled one. */
export async function advanceReindex(
  db: D1Database,
  appId: string,
  change: { retireCursor?: number; state?: 'done' | 'failed'; error?: string } = {},
): Promise<void> {
  const now = formatTimestamp();
  await db
    .prepare(
      `UPDATE reindexes SET updated_at = ?2, retire_cursor = COALESCE(?3, retire_cursor), state = COALESCE(?4, state),
         error = COALESCE(?5, error), finished_at = CASE WHEN ?4 IS NULL THEN finished_at ELSE ?2 END
       WHERE app_id = ?1`,
    )
    .bind(appId, now, change.retireCursor ?? null, change.state ?? null, change.error ?? null)
    .run();
}

/** The images of the application and how many of them are in `model`. */
export async function imagesInModel(db: D1Database, appId: string, model: string): Promise<{ total: number; inModel: number }> {
  const row = await db
    .prepare('SELECT COUNT(*) AS total, COALESCE(SUM(embed_model = ?2), 0) AS in_model FROM images WHERE app_id = ?1')
    .bind(appId, model)
    .first<{ total: number; in_model: number }>();
  return { total: row?.total ?? 0, inModel: row?.in_model ?? 0 };
}

/** Reindexes under way that have not moved since `before`: their message was lost, the sweeper sends another. */
export async function stalledReindexes(db: D1Database, before: string): Promise<string[]> {
  const { results } = await db
    .prepare(`SELECT app_id FROM reindexes WHERE state IN ('embedding', 'retiring') AND updated_at < ?`)
    .bind(before)
    .all<{ app_id: string }>();
  return results.map((row) => row.app_id);
}
