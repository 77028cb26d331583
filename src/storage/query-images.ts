import type { ImageInfo } from '../images/probe';
import { formatTimestamp } from '../time';
import { deleteBlobs, queryBlobKey } from './blobs';

/** `analysis`: what the inference service found in the image (search/query-analysis.ts, keptAnalysisText), or null if not stored yet. */
export type QueryImageRow = { id: string; blob_key: string; format: string; width: number; height: number; analysis: string | null };

export async function insertQueryImage(db: D1Database, appId: string, imId: string, info: ImageInfo, analysis: string): Promise<void> {
  await db
    .prepare('INSERT INTO query_images (id, app_id, blob_key, format, width, height, analysis, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
    .bind(imId, appId, queryBlobKey(appId, imId), info.format, info.width, info.height, analysis, formatTimestamp())
    .run();
}

/** Stores the analysis of a query image kept without one. */
export async function setQueryImageAnalysis(db: D1Database, appId: string, imId: string, analysis: string): Promise<void> {
  await db.prepare('UPDATE query_images SET analysis = ? WHERE app_id = ? AND id = ?').bind(analysis, appId, imId).run();
}

/**
 * How long a query image is kept for later searches by its `im_id`: a day. An expired one is unknown at once and
 * deleted by the cron sweeper (deleteExpiredQueryImages).
 */
export const QUERY_IMAGE_TTL_HOURS = 24;

const expiredBefore = (now: Date): string => formatTimestamp(new Date(now.getTime() - QUERY_IMAGE_TTL_HOURS * 3_600_000));

/** The application's own query image, while it has not expired; another application's im_id is unknown. */
export async function findQueryImage(db: D1Database, appId: string, imId: string, now = new Date()): Promise<QueryImageRow | null> {
  return db
    .prepare('SELECT id, blob_key, format, width, height, analysis FROM query_images WHERE app_id = ? AND id = ? AND created_at >= ?')
    .bind(appId, imId, expiredBefore(now))
    .first<QueryImageRow>();
}

/** Deletes expired query images, bytes first; answers how many went (at most `limit`, the rest on the next run). */
export async function deleteExpiredQueryImages(db: D1Database, bucket: R2Bucket, now: Date, limit = 500): Promise<number> {
  const { results } = await db
    .prepare('SELECT id, blob_key FROM query_images WHERE created_at < ? ORDER BY created_at LIMIT ?')
    .bind(expiredBefore(now), limit)
    .all<{ id: string; blob_key: string }>();
  if (results.length === 0) return 0;
  await deleteBlobs(bucket, results.map((row) => row.blob_key));
  await db.prepare('DELETE FROM query_images WHERE id IN (SELECT value FROM json_each(?))').bind(JSON.stringify(results.map((row) => row.id))).run();
  return results.length;
}
