import type { AppLimits } from './apps';

/** The operator limit that refuses an insert: the collection's size or the images waiting to be processed. */
export type InsertLimit = 'image_limit' | 'pending_limit';

/** An insert that would pass an operator limit, refused by the batch that would have recorded it (createTransaction). */
export class LimitReached extends Error {
  override name = 'LimitReached';
  readonly limit: InsertLimit;

  constructor(limit: InsertLimit) {
    super(`${limit} reached`);
    this.limit = limit;
  }
}

/**
 * The limit an insert of the names ?2 (a JSON array) into application ?1 would pass, given `image_limit` ?3 and
 * `pending_limit` ?4 (NULL: none), or NULL: an SQL expression, so that the batch recording an insert decides it and
 * parallel inserts are decided one after another. Images waiting count as new until processed (a limit may refuse a
 * little early, never overflow), names already in the collection (re-inserts) as nothing.
 */
export const LIMIT_PASSED = `(
  SELECT CASE
    WHEN ?3 IS NOT NULL AND images + pending + json_array_length(?2) - existing > ?3 THEN 'image_limit'
    WHEN ?4 IS NOT NULL AND pending + json_array_length(?2) > ?4 THEN 'pending_limit'
  END
  FROM (SELECT
    (SELECT count(*) FROM images WHERE app_id = ?1) AS images,
    (SELECT count(*) FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
      WHERE t.app_id = ?1 AND i.state = 'pending') AS pending,
    (SELECT count(*) FROM images WHERE app_id = ?1 AND im_name IN (SELECT value FROM json_each(?2))) AS existing)
  WHERE ?3 IS NOT NULL OR ?4 IS NOT NULL
)`;

/** The operator limits an insert is held to (null: none). */
export type InsertLimits = Pick<AppLimits, 'imageLimit' | 'pendingLimit'>;

/** The parameters ?1 to ?4 of LIMIT_PASSED. */
export const limitParams = (appId: string, names: string[], limits: InsertLimits) =>
  [appId, JSON.stringify(names), limits.imageLimit, limits.pendingLimit] as const;
