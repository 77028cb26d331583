import { notMovingOut } from './moves';
import { DATA_ERRORS } from '../http/messages';
import { formatTimestamp } from '../time';
import type { Env } from '../env';
import { catalogDatabase, databaseNamed, databasePosition } from './databases';
import { forgetNumbers, numberTaken, takeNumber } from './sequence';
import type { ImageMetadata } from './metadata';
import { LIMIT_PASSED, LimitReached, limitParams, type InsertLimit, type InsertLimits } from './usage';
import { couldNameImage } from './image-name';

/**
 * One accepted image of an `/insert`: downloaded from `imUrl`, or sent as a file and staged in R2 under `stagedKey`.
 * With neither it is a metadata-only update of an image already in the collection: its given fields replace those
 * stored, nothing is downloaded or embedded again.
 */
export type InsertItem = { index: number; imName: string; imUrl: string | null; stagedKey?: string | null; metadata: ImageMetadata };

export const isMetadataUpdate = (item: InsertItem): boolean => item.imUrl === null && !item.stagedKey;
/** An item's kind as `insert_items.kind` keeps it: an image to fetch and embed, or a metadata-only update. */
export type ItemKind = 'image' | 'metadata';
export const itemKind = (item: InsertItem): ItemKind => (isMetadataUpdate(item) ? 'metadata' : 'image');
/**
 * `seq`: the item's place in the order of operations on its name, and for an image item the id of the version it
 * makes (migrations/0008).
 */
/** An item waiting to be processed, in the catalog `database` of its application. */
/** `movingOut`: its application is being moved out of the item's database (ingest/move.ts). */
export type PendingItem = InsertItem & { transId: number; appId: string; seq: number; database: string; movingOut: boolean };
export type ItemOutcome = { state: 'done' } | { state: 'failed'; code: number; message: string };

export type TransactionStatus = {
  trans_id: number;
  processed_percent: number;
  success_count: number;
  fail_count: number;
  total: number;
  error_list: { im_name: string; error_code: number; error_message: string }[];
  error_page: number;
  error_limit: number;
  start_time: string;
  update_time: string;
};

/** Below 2^53 (docs/decisions.md), unique enough that a clash is retried rather than coordinated. */
const newTransactionId = (): number => Date.now() * 1024 + Math.floor(Math.random() * 1024);

/**
 * Records a transaction and its accepted items in one atomic batch, before any queue message is sent, unless the
 * insert would pass one of the operator's `limits` (LimitReached): the same batch decides it, so parallel inserts
 * cannot all pass one check. Each item takes the next number of the allocator, in index order: its place in the order
 * of operations on its name, and for an image item the id of the version it makes.
 */
export async function createTransaction(
  env: Env,
  app: { id: string; database: string },
  items: InsertItem[],
  limits: InsertLimits = { imageLimit: null, pendingLimit: null },
): Promise<number> {
  const db = catalogDatabase(env, app);
  const appId = app.id;
  const taken = numberTaken(databasePosition(env, app.database));
  const now = formatTimestamp();
  const limited = limitParams(appId, items.map((item) => item.imName), limits);
  for (let attempt = 0; ; attempt++) {
    const transId = newTransactionId();
    let results: D1Result<{ passed: InsertLimit | null }>[];
    try {
      results = await db.batch<{ passed: InsertLimit | null }>([
        db.prepare(`SELECT ${LIMIT_PASSED} AS passed`).bind(...limited),
        db
          .prepare(
            `INSERT INTO insert_transactions (id, app_id, total, start_time, update_time)
             SELECT ?5, ?1, ?6, ?7, ?7 WHERE ${LIMIT_PASSED} IS NULL`,
          )
          .bind(...limited, transId, items.length, now),
        ...items.flatMap((item) => {
          return [
            takeNumber(db),
            // Only with the transaction: none when a limit refused it.
            db
              .prepare(
                `INSERT INTO insert_items (trans_id, item_index, im_name, im_url, staged_key, metadata, kind, seq)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ${taken} WHERE EXISTS (SELECT 1 FROM insert_transactions WHERE id = ?1)`,
              )
              .bind(
                transId,
                item.index,
                item.imName,
                item.imUrl ?? '',
                item.stagedKey ?? null,
                JSON.stringify(item.metadata),
                itemKind(item),
              ),
          ];
        }),
        forgetNumbers(db),
      ]);
    } catch (error) {
      if (attempt >= 2 || !String(error).includes('UNIQUE')) throw error;
      continue;
    }
    const passed = results[0]?.results[0]?.passed;
    if (passed) throw new LimitReached(passed);
    return transId;
  }
}

/** Takes back a transaction whose queue messages could not be sent, so nothing half-accepted remains. */
export async function deleteTransaction(db: D1Database, transId: number): Promise<void> {
  await db.batch([
    db.prepare('DELETE FROM insert_items WHERE trans_id = ?').bind(transId),
    db.prepare('DELETE FROM insert_transactions WHERE id = ?').bind(transId),
  ]);
}

/** The item of catalog `database` if it still waits to be processed; null once it is done or failed (a redelivered message). */
export async function getPendingItem(env: Env, database: string, transId: number, index: number): Promise<PendingItem | null> {
  const db = databaseNamed(env, database);
  const row = await db
    .prepare(
      `SELECT t.app_id, i.im_name, i.im_url, i.staged_key, i.metadata, i.kind, i.seq, NOT ${notMovingOut('t.app_id')} AS moving_out
       FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
       WHERE i.trans_id = ? AND i.item_index = ? AND i.state = 'pending'`,
    )
    .bind(transId, index)
    .first<{
      app_id: string;
      im_name: string;
      im_url: string;
      staged_key: string | null;
      metadata: string;
      kind: 'image' | 'metadata';
      seq: number | null;
      moving_out: number;
    }>();
  if (!row) return null;
  // Accepted before items were numbered (migrations/0008): numbered now, after every item numbered at acceptance.
  const seq = row.seq ?? (await numberItem(db, databasePosition(env, database), transId, index));
  return {
    transId,
    index,
    appId: row.app_id,
    imName: row.im_name,
    imUrl: row.kind === 'metadata' || row.staged_key !== null ? null : row.im_url,
    stagedKey: row.staged_key,
    metadata: JSON.parse(row.metadata) as ImageMetadata,
    seq,
    database,
    movingOut: row.moving_out === 1,
  };
}

async function numberItem(db: D1Database, position: number, transId: number, index: number): Promise<number> {
  const [, , , numbered] = await db.batch<{ seq: number }>([
    takeNumber(db),
    db.prepare(`UPDATE insert_items SET seq = ${numberTaken(position)} WHERE trans_id = ? AND item_index = ? AND seq IS NULL`).bind(transId, index),
    forgetNumbers(db),
    db.prepare('SELECT seq FROM insert_items WHERE trans_id = ? AND item_index = ?').bind(transId, index),
  ]);
  return numbered!.results[0]!.seq;
}

/**
 * SQL: whether insert item (`transId`, `index`: SQL expressions, `?` by default) still waits to be processed. What an
 * item brings (a version, a metadata merge) is applied only by statements guarded by this: an item settled meanwhile
 * (cancelled by a remove, given up, or a redelivery of one done) changes nothing.
 */
export const itemPending = (transId = '?', index = '?'): string =>
  `EXISTS (SELECT 1 FROM insert_items WHERE trans_id = ${transId} AND item_index = ${index} AND state = 'pending')`;

/**
 * The statements, for a remove's batch, that settle every pending item of the application's names (the JSON array
 * `names`), images and metadata updates alike, as failed with 111: the remove overtook them, so none is applied
 * after it (itemPending) and its transaction counts it failed, not a success (docs/decisions.md, "Removal and
 * order"). The second answers the names of the items it settled.
 */
export function cancelPendingItems(db: D1Database, appId: string, names: string): [D1PreparedStatement, D1PreparedStatement] {
  const pending = `state = 'pending' AND im_name IN (SELECT value FROM json_each(?2))
    AND EXISTS (SELECT 1 FROM insert_transactions t WHERE t.id = insert_items.trans_id AND t.app_id = ?1)`;
  const { code, message } = DATA_ERRORS.removedBeforeProcessed;
  return [
    db
      .prepare(`UPDATE insert_transactions SET update_time = ?3 WHERE id IN (SELECT trans_id FROM insert_items WHERE ${pending})`)
      .bind(appId, names, formatTimestamp()),
    db
      .prepare(`UPDATE insert_items SET state = 'failed', error_code = ?3, error_message = ?4 WHERE ${pending} RETURNING im_name`)
      .bind(appId, names, code, message),
  ];
}

/** The statements that settle an item once: a second outcome for the same item (a redelivered message) changes nothing. */
export function settleStatements(db: D1Database, transId: number, index: number, outcome: ItemOutcome): D1PreparedStatement[] {
  const failure = outcome.state === 'failed' ? outcome : { code: null, message: null };
  return [
    db
      .prepare(
        `UPDATE insert_items SET state = ?, error_code = ?, error_message = ?
         WHERE trans_id = ? AND item_index = ? AND state = 'pending'`,
      )
      .bind(outcome.state, failure.code, failure.message, transId, index),
    db.prepare('UPDATE insert_transactions SET update_time = ? WHERE id = ?').bind(formatTimestamp(), transId),
  ];
}

export async function settleItem(db: D1Database, transId: number, index: number, outcome: ItemOutcome): Promise<void> {
  await db.batch(settleStatements(db, transId, index, outcome));
}

/** Staged files of settled items not deleted yet (their deletion failed), at most `limit`. */
export async function stagedKeysLeft(db: D1Database, limit: number): Promise<{ transId: number; index: number; stagedKey: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT trans_id, item_index, staged_key FROM insert_items WHERE staged_key IS NOT NULL AND state != 'pending'
         AND trans_id IN (SELECT id FROM insert_transactions WHERE ${notMovingOut('app_id')}) LIMIT ?`,
    )
    .bind(limit)
    .all<{ trans_id: number; item_index: number; staged_key: string }>();
  return results.map((row) => ({ transId: row.trans_id, index: row.item_index, stagedKey: row.staged_key }));
}

/** Which of `keys` an item still names as its staged file. */
export async function referencedStagedKeys(db: D1Database, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { results } = await db
    .prepare('SELECT staged_key FROM insert_items WHERE staged_key IN (SELECT value FROM json_each(?))')
    .bind(JSON.stringify(keys))
    .all<{ staged_key: string }>();
  return new Set(results.map((row) => row.staged_key));
}

/** Forgets an item's staged file once it is deleted. */
export async function forgetStagedKey(db: D1Database, transId: number, index: number): Promise<void> {
  await db.prepare('UPDATE insert_items SET staged_key = NULL WHERE trans_id = ? AND item_index = ?').bind(transId, index).run();
}

/** Marks an item as in work now: the sweeper leaves items that a consumer is working on, or never started, alone. */
export async function markStarted(db: D1Database, transId: number, index: number): Promise<void> {
  await db.prepare('UPDATE insert_items SET started_at = ? WHERE trans_id = ? AND item_index = ?').bind(formatTimestamp(), transId, index).run();
}

/**
 * Whether an item of this name accepted before `seq` is still waiting, an image or a metadata update: a metadata
 * update waits for it, so that updates of a name apply one after another in the order they were accepted.
 */
export async function hasEarlierPendingItem(db: D1Database, appId: string, imName: string, seq: number): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT 1 FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
       WHERE t.app_id = ? AND i.im_name = ? AND i.state = 'pending' AND i.seq < ? LIMIT 1`,
    )
    .bind(appId, imName, seq)
    .first();
  return row !== null;
}

/** A pending item of a transaction that stopped making progress, its kind, and how often it was re-sent already. */
export type StalledItem = { transId: number; index: number; kind: ItemKind; sweeps: number };

/**
 * Which kinds of item a consumer started in `db` since `since`: with every database's answer, which queues are busy
 * (images go through the ingest queue, metadata-only updates through their own: ingest/message.ts).
 */
export async function kindsStartedSince(db: D1Database, since: string): Promise<Record<ItemKind, boolean>> {
  const row = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM insert_items WHERE started_at >= ?1 AND kind = 'image') AS image,
              EXISTS (SELECT 1 FROM insert_items WHERE started_at >= ?1 AND kind = 'metadata') AS metadata`,
    )
    .bind(since)
    .first<{ image: number; metadata: number }>();
  return { image: row?.image === 1, metadata: row?.metadata === 1 };
}

/**
 * Pending items whose message looks lost, oldest first: one a consumer started before `before` and never settled (it
 * died with it), and one never started of a transaction older than that, only while its queue is idle (`idle`, by
 * kind: no consumer started anything since `before` that would show the queue at work, in any database): an item
 * queued behind a long import is not lost.
 */
export async function findStalledItems(db: D1Database, before: string, limit: number, idle: Record<ItemKind, boolean>): Promise<StalledItem[]> {
  const { results } = await db
    .prepare(
      `SELECT i.trans_id, i.item_index, i.kind, i.sweeps FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
       WHERE i.state = 'pending' AND (
         (i.started_at IS NOT NULL AND i.started_at < ?1)
         OR (i.started_at IS NULL AND t.start_time < ?1 AND (CASE i.kind WHEN 'metadata' THEN ?4 ELSE ?3 END))
       ) AND ${notMovingOut('t.app_id')}
       ORDER BY i.trans_id, i.item_index LIMIT ?2`,
    )
    .bind(before, limit, idle.image ? 1 : 0, idle.metadata ? 1 : 0)
    .all<{ trans_id: number; item_index: number; kind: ItemKind; sweeps: number }>();
  return results.map((row) => ({ transId: row.trans_id, index: row.item_index, kind: row.kind, sweeps: row.sweeps }));
}

/** The application's pending items after rowid `after`, oldest first: each with its kind and rowid, the next call's `after`. */
export async function pendingItemsAfter(
  db: D1Database,
  appId: string,
  after: number,
  limit: number,
): Promise<{ transId: number; index: number; kind: ItemKind; rowid: number }[]> {
  const { results } = await db
    .prepare(
      `SELECT i.rowid AS item_rowid, i.trans_id, i.item_index, i.kind FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
       WHERE t.app_id = ? AND i.state = 'pending' AND i.rowid > ? ORDER BY i.rowid LIMIT ?`,
    )
    .bind(appId, after, limit)
    .all<{ item_rowid: number; trans_id: number; item_index: number; kind: ItemKind }>();
  return results.map((row) => ({ transId: row.trans_id, index: row.item_index, kind: row.kind, rowid: row.item_rowid }));
}

/** Counts a re-send of each item, which is queued again: not started until a consumer takes the new message. */
export async function recordSweep(db: D1Database, items: StalledItem[]): Promise<void> {
  if (items.length === 0) return;
  await db.batch(
    items.map((item) =>
      db.prepare('UPDATE insert_items SET sweeps = sweeps + 1, started_at = NULL WHERE trans_id = ? AND item_index = ?').bind(item.transId, item.index),
    ),
  );
}

/** Whether an image of this name is accepted but not yet processed, so a search for it can say so. */
export async function isImagePending(db: D1Database, appId: string, imName: string): Promise<boolean> {
  if (!couldNameImage(imName)) return false;
  const row = await db
    .prepare(
      `SELECT 1 FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
       WHERE t.app_id = ? AND i.im_name = ? AND i.state = 'pending' LIMIT 1`,
    )
    .bind(appId, imName)
    .first();
  return row !== null;
}

export async function getTransactionStatus(
  db: D1Database,
  appId: string,
  transId: number,
  page: { errorPage: number; errorLimit: number },
): Promise<TransactionStatus | null> {
  const [summary, errors] = await db.batch([
    db
      .prepare(
        `SELECT t.total, t.start_time, t.update_time,
           (SELECT count(*) FROM insert_items WHERE trans_id = t.id AND state = 'done') AS success_count,
           (SELECT count(*) FROM insert_items WHERE trans_id = t.id AND state = 'failed') AS fail_count
         FROM insert_transactions t WHERE t.id = ? AND t.app_id = ?`,
      )
      .bind(transId, appId),
    db
      .prepare(
        `SELECT i.im_name, i.error_code, i.error_message FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id
         WHERE i.trans_id = ? AND t.app_id = ? AND i.state = 'failed' ORDER BY i.item_index LIMIT ? OFFSET ?`,
      )
      .bind(transId, appId, page.errorLimit, (page.errorPage - 1) * page.errorLimit),
  ]);
  const row = summary?.results[0] as
    | { total: number; start_time: string; update_time: string; success_count: number; fail_count: number }
    | undefined;
  if (!row) return null;
  const processed = row.success_count + row.fail_count;
  return {
    trans_id: transId,
    // Rounded down, so 100 means every image is settled.
    processed_percent: row.total === 0 ? 100 : Math.floor((processed * 100) / row.total),
    success_count: row.success_count,
    fail_count: row.fail_count,
    total: row.total,
    error_list: (errors?.results ?? []) as TransactionStatus['error_list'],
    error_page: page.errorPage,
    error_limit: page.errorLimit,
    start_time: row.start_time,
    update_time: row.update_time,
  };
}

/** Default of INSERT_STATUS_RETENTION_HOURS, and its least: a client may poll `/insert/status` for a day. */
export const INSERT_STATUS_RETENTION_HOURS = 24;

/** How long a finished transaction's status is kept: INSERT_STATUS_RETENTION_HOURS, at least a day. */
export function insertStatusRetentionHours(env: { INSERT_STATUS_RETENTION_HOURS?: string }): number {
  const hours = Number(env.INSERT_STATUS_RETENTION_HOURS ?? INSERT_STATUS_RETENTION_HOURS);
  return Number.isFinite(hours) ? Math.max(INSERT_STATUS_RETENTION_HOURS, hours) : INSERT_STATUS_RETENTION_HOURS;
}

/**
 * Deletes up to `limit` transactions, oldest first, whose every item settled before `before` (and whose staged files
 * were released), with their items: `/insert/status` then answers them as unknown. The number deleted.
 */
export async function deleteFinishedTransactions(db: D1Database, before: string, limit: number): Promise<number> {
  const { results } = await db
    .prepare(
      `SELECT id FROM insert_transactions t WHERE update_time < ?1
         AND NOT EXISTS (SELECT 1 FROM insert_items i WHERE i.trans_id = t.id AND (i.state = 'pending' OR i.staged_key IS NOT NULL))
       ORDER BY update_time LIMIT ?2`,
    )
    .bind(before, limit)
    .all<{ id: number }>();
  if (results.length === 0) return 0;
  const ids = JSON.stringify(results.map(({ id }) => id));
  // Settled items only: one that became pending again since (it cannot) would keep its transaction.
  await db.batch([
    db.prepare(`DELETE FROM insert_items WHERE trans_id IN (SELECT value FROM json_each(?)) AND state != 'pending'`).bind(ids),
    db
      .prepare('DELETE FROM insert_transactions WHERE id IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM insert_items i WHERE i.trans_id = insert_transactions.id)')
      .bind(ids),
  ]);
  return results.length;
}
