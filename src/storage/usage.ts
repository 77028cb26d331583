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
