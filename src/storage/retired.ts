import type { Env } from '../env';
import { formatTimestamp } from '../time';
import { deleteBlobs } from './blobs';
import { deleteImageVectors } from './vectors';

const RETIRE = 'INSERT INTO retired_versions (image_id, app_id, object_count, blob_key, retired_at)';

/** Retires the live versions of the images rows `where` selects (bound to `values`), in a batch that replaces or deletes them. */
export const retireLiveVersions = (db: D1Database, where: string, ...values: unknown[]): D1PreparedStatement =>
  db
    .prepare(`${RETIRE} SELECT id, app_id, object_count, blob_key, ? FROM images WHERE ${where} ON CONFLICT DO NOTHING`)
    .bind(formatTimestamp(), ...values);

/**
 * Retires a version unless it is live: one that lost to a later operation on its name, or whose item was given up.
 * `objectCount` bounds the object vectors it may have written.
 */
export const retireUnlessLive = (db: D1Database, version: { id: number; appId: string; objectCount: number; blobKey: string }): D1PreparedStatement =>
  db
    .prepare(`${RETIRE} SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM images WHERE id = ?) ON CONFLICT DO NOTHING`)
    .bind(version.id, version.appId, version.objectCount, version.blobKey, formatTimestamp(), version.id);

/** Retired versions deleted per call; a larger backlog is taken by the next calls and the cron sweeper. */
const RETIRED_PER_RUN = 100;

/**
 * Deletes what retired image versions left (migrations/0008: replaced, removed, superseded or failed versions): their
 * vectors, then their bytes, then the record. Every step may be repeated, so a failure anywhere leaves the record for
 * the next run; the consumer and `/remove` call this after they retire a version, the cron sweeper for the rest. A
 * version whose vectors a metadata update may be writing is left until it is done (storage/stale-vectors.ts).
 */
export async function deleteRetiredVersions(env: Env, appId?: string): Promise<number> {
  const { results } = await env.DB.prepare(
    `SELECT image_id, object_count, blob_key FROM retired_versions r
     WHERE NOT EXISTS (SELECT 1 FROM stale_vector_metadata WHERE image_id = r.image_id) ${appId === undefined ? '' : 'AND r.app_id = ?'}
     ORDER BY retired_at LIMIT ${RETIRED_PER_RUN}`,
  )
    .bind(...(appId === undefined ? [] : [appId]))
    .all<{ image_id: number; object_count: number; blob_key: string }>();
  if (results.length === 0) return 0;
  await deleteImageVectors(env, results.map((row) => ({ id: row.image_id, object_count: row.object_count })));
  await deleteBlobs(env.BLOBS, results.map((row) => row.blob_key));
  await env.DB.prepare('DELETE FROM retired_versions WHERE image_id IN (SELECT value FROM json_each(?))')
    .bind(JSON.stringify(results.map((row) => row.image_id)))
    .run();
  return results.length;
}

/** After a version was retired: its leftovers are deleted now if they can be, else by the cron sweeper. */
export async function deleteRetiredSoon(env: Env, appId: string): Promise<void> {
  try {
    await deleteRetiredVersions(env, appId);
  } catch (error) {
    console.error(JSON.stringify({ event: 'retired_delete_failed', appId, error: String(error) }));
  }
}
