import { notMovingOut } from './moves';
import { formatTimestamp } from '../time';
import { retryAt } from './back-off';

/**
 * Versions whose vectors may carry older metadata than their D1 row (migrations/0014): a metadata-only update records
 * its version in the batch that merges into D1 and deletes the record in the batch that settles it, after rewriting
 * the vectors; each attempt has a record of its own, so one delivery settling cannot release another still writing.
 * A record left by an update given up is rewritten from D1 by the cron sweeper. While any is held, the version's
 * vectors are not deleted if it is retired (storage/retired.ts), nor a reindex's old model emptied
 * (storage/reindexes.ts): the rewrite could write them back.
 */

/** An attempt's record: its token, its item and the version it merged into. */
export type StaleVectors = { attempt: string; transId: number; index: number; imageId: number; appId: string };

/**
 * Records, in the merge's batch, the version of the images row `where` selects (bound to `values`) for an attempt
 * (a fresh token) at the item.
 */
export const recordStaleVectors = (db: D1Database, attempt: string, item: { transId: number; index: number }, where: string, ...values: unknown[]): D1PreparedStatement =>
  db
    .prepare(
      `INSERT INTO stale_vector_metadata (attempt, trans_id, item_index, image_id, app_id, recorded_at) SELECT ?, ?, ?, id, app_id, ? FROM images WHERE ${where}`,
    )
    .bind(attempt, item.transId, item.index, formatTimestamp(), ...values);

/** Deletes the attempt's record: its vectors are rewritten, or it merged nothing. */
export const vectorsRewritten = (db: D1Database, attempt: string): D1PreparedStatement =>
  db.prepare('DELETE FROM stale_vector_metadata WHERE attempt = ?').bind(attempt);

/**
 * Records whose update is no longer pending (given up after its merge: nothing else will rewrite its vectors) and
 * whose rewrite is due at `now`, oldest first: one that failed waits (staleVectorsFailed), so it never holds the rest back.
 */
export async function staleVectorsLeft(db: D1Database, limit: number, now: Date): Promise<StaleVectors[]> {
  const { results } = await db
    .prepare(
      `SELECT s.attempt, s.trans_id, s.item_index, s.image_id, s.app_id FROM stale_vector_metadata s
       WHERE s.retry_at <= ?2
         AND NOT EXISTS (SELECT 1 FROM insert_items i WHERE i.trans_id = s.trans_id AND i.item_index = s.item_index AND i.state = 'pending')
         AND ${notMovingOut('s.app_id')}
       ORDER BY s.retry_at, s.recorded_at LIMIT ?1`,
    )
    .bind(limit, formatTimestamp(now))
    .all<{ attempt: string; trans_id: number; item_index: number; image_id: number; app_id: string }>();
  return results.map((row) => ({ attempt: row.attempt, transId: row.trans_id, index: row.item_index, imageId: row.image_id, appId: row.app_id }));
}

/** A rewrite failed: the record is tried again after a wait that doubles with each failure (storage/back-off.ts). */
export async function staleVectorsFailed(db: D1Database, attempt: string, now: Date): Promise<void> {
  const row = await db.prepare('SELECT failures FROM stale_vector_metadata WHERE attempt = ?').bind(attempt).first<{ failures: number }>();
  if (!row) return;
  await db.prepare('UPDATE stale_vector_metadata SET failures = failures + 1, retry_at = ? WHERE attempt = ?').bind(retryAt(row.failures, now), attempt).run();
}
