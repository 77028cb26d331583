import type { ImageInfo } from '../images/probe';
import { formatTimestamp } from '../time';

export type QueryImageRow = { id: string; blob_key: string; format: string; width: number; height: number };

export const queryBlobKey = (appId: string, imId: string): string => `${appId}/queries/${imId}`;

export async function insertQueryImage(db: D1Database, appId: string, imId: string, info: ImageInfo): Promise<void> {
  await db
    .prepare('INSERT INTO query_images (id, app_id, blob_key, format, width, height, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .bind(imId, appId, queryBlobKey(appId, imId), info.format, info.width, info.height, formatTimestamp())
    .run();
}

/** The application's own query image; another application's im_id is unknown. */
export async function findQueryImage(db: D1Database, appId: string, imId: string): Promise<QueryImageRow | null> {
  return db
    .prepare('SELECT id, blob_key, format, width, height FROM query_images WHERE app_id = ? AND id = ?')
    .bind(appId, imId)
    .first<QueryImageRow>();
}
