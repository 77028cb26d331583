import { notMovingOut } from './moves';
import type { Env } from '../env';
import { formatTimestamp } from '../time';
import { retryAt } from './back-off';
import { deleteBlobs } from './blobs';
import { catalogDatabase } from './databases';
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
/** Deletions the sweeper tries per call at most, splits included: each version at fault in a batch costs about 14. */
const TRIES_PER_RUN = 32;

type Retired = { image_id: number; object_count: number; blob_key: string; failures: number };

/**
 * Retired versions due at `now` (the application's, or every one's), oldest first: those never tried in vain before
 * those whose wait is over. One whose vectors an update may still write is left (storage/stale-vectors.ts).
 */
async function dueRetired(db: D1Database, now: Date, appId?: string): Promise<Retired[]> {
  const { results } = await db
    .prepare(
      `SELECT image_id, object_count, blob_key, failures FROM retired_versions r
       WHERE r.retry_at <= ? AND NOT EXISTS (SELECT 1 FROM stale_vector_metadata WHERE image_id = r.image_id) AND ${notMovingOut('r.app_id')}
         ${appId === undefined ? '' : 'AND r.app_id = ?'}
       ORDER BY r.retry_at, r.retired_at LIMIT ${RETIRED_PER_RUN}`,
    )
    .bind(formatTimestamp(now), ...(appId === undefined ? [] : [appId]))
    .all<Retired>();
  return results;
}

/** Deletes the vectors, then the bytes, then the records of `versions`: every step may be repeated. */
async function deleteLeftovers(env: Env, db: D1Database, versions: Retired[]): Promise<void> {
  await deleteImageVectors(env, versions.map((row) => ({ id: row.image_id, object_count: row.object_count })));
  await deleteBlobs(env.BLOBS, versions.map((row) => row.blob_key));
  await db.prepare('DELETE FROM retired_versions WHERE image_id IN (SELECT value FROM json_each(?))')
    .bind(JSON.stringify(versions.map((row) => row.image_id)))
    .run();
}

/**
 * The cron sweeper's deletion of what retired image versions left (migrations/0008: replaced, removed, superseded or
 * failed versions): their vectors, then their bytes, then the record, for a batch of the versions due at `now`. A
 * batch that fails is split in halves, each tried on its own, so that a version whose deletion fails is found in a
 * few tries and waits (storage/back-off.ts) while the others of its batch go; what the tries left is taken next time.
 */
export async function deleteRetiredVersions(env: Env, db: D1Database, now: Date): Promise<{ deleted: number; failed: number }> {
  const done = { deleted: 0, failed: 0, tries: 0 };
  const attempt = async (versions: Retired[]): Promise<void> => {
    if (versions.length === 0 || done.tries++ >= TRIES_PER_RUN) return;
    try {
      await deleteLeftovers(env, db, versions);
      done.deleted += versions.length;
      return;
    } catch (error) {
      if (versions.length > 1) {
        const half = Math.ceil(versions.length / 2);
        await attempt(versions.slice(0, half));
        await attempt(versions.slice(half));
        return;
      }
      const [version] = versions as [Retired];
      console.error(JSON.stringify({ event: 'retired_delete_failed', imageId: version.image_id, error: String(error) }));
      await db.prepare('UPDATE retired_versions SET failures = failures + 1, retry_at = ? WHERE image_id = ?')
        .bind(retryAt(version.failures, now), version.image_id)
        .run();
      done.failed++;
    }
  };
  await attempt(await dueRetired(db, now));
  return { deleted: done.deleted, failed: done.failed };
}

/**
 * After a version was retired (the consumer, `/remove`): one try of the application's due versions now. A failure is
 * left to the sweeper and not counted against the versions' back-off, so that a removed image's vectors still go at
 * the next sweep (docs/deploy.md).
 */
export async function deleteRetiredSoon(env: Env, app: { id: string; database: string }): Promise<void> {
  const appId = app.id;
  try {
    const db = catalogDatabase(env, app);
    const due = await dueRetired(db, new Date(), appId);
    if (due.length > 0) await deleteLeftovers(env, db, due);
  } catch (error) {
    console.error(JSON.stringify({ event: 'retired_delete_failed', appId, error: String(error) }));
  }
}
