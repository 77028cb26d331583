/** How full an application's collection is, for its operator limits. */
export type CollectionUsage = {
  /** Images in the collection. */
  images: number;
  /** Images accepted by /insert and not yet processed. */
  pending: number;
  /** How many of `names` are already in the collection (re-inserts, which add nothing). */
  existing: number;
};

export async function collectionUsage(db: D1Database, appId: string, names: string[]): Promise<CollectionUsage> {
  const row = await db
    .prepare(
      `SELECT
         (SELECT count(*) FROM images WHERE app_id = ?1) AS images,
         (SELECT count(*) FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
           WHERE t.app_id = ?1 AND i.state = 'pending') AS pending,
         (SELECT count(*) FROM images WHERE app_id = ?1 AND im_name IN (SELECT value FROM json_each(?2))) AS existing`,
    )
    .bind(appId, JSON.stringify(names))
    .first<CollectionUsage>();
  return row ?? { images: 0, pending: 0, existing: 0 };
}

/** What one minute of an application's searches used, after counting the call being made. */
export type MinuteUsage = { searches: number; uploadBytes: number; secondsLeft: number };

/**
 * Counts a search call (and the bytes of its uploaded image) in the application's current minute, atomically, and
 * answers the minute's totals; windows older than an hour are forgotten by the sweeper (pruneUsage).
 */
export async function countSearch(db: D1Database, appId: string, uploadBytes: number, now = Date.now()): Promise<MinuteUsage> {
  const window = Math.floor(now / 60_000);
  const row = await db
    .prepare(
      `INSERT INTO usage_windows (app_id, window, searches, upload_bytes) VALUES (?, ?, 1, ?)
       ON CONFLICT (app_id, window) DO UPDATE SET searches = searches + 1, upload_bytes = upload_bytes + excluded.upload_bytes
       RETURNING searches, upload_bytes`,
    )
    .bind(appId, window, uploadBytes)
    .first<{ searches: number; upload_bytes: number }>();
  return { searches: row?.searches ?? 1, uploadBytes: row?.upload_bytes ?? uploadBytes, secondsLeft: 60 - Math.floor((now % 60_000) / 1000) };
}

export async function pruneUsage(db: D1Database, now = Date.now()): Promise<void> {
  await db.prepare('DELETE FROM usage_windows WHERE window < ?').bind(Math.floor(now / 60_000) - 60).run();
}
