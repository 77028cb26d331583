/**
 * The insert items a phase of an admin job waits for (a reindex, a tuning): those accepted before it began may have
 * read the application's write targets of before (storage/reindexes.ts, writeTargets), so the job lets them apply first.
 */

/** The last item number of application ?1 still pending, as SQL: recorded when a phase begins. */
export const LAST_PENDING_SEQ = `(SELECT COALESCE(MAX(i.seq), 0) FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
  WHERE t.app_id = ?1 AND i.state = 'pending')`;

/** Pending image items of application ?1 numbered up to `seq` (SQL): inserts that may have read its targets before a phase began. */
export const pendingInsertsUpTo = (seq: string): string =>
  `SELECT 1 FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
   WHERE t.app_id = ?1 AND i.state = 'pending' AND i.kind = 'image' AND i.seq <= ${seq}`;
