/**
 * Moving an application's catalog rows from one D1 database to another (docs/decisions.md, "Placement"): a fence in
 * the source holds its writes (migrations/0027's triggers), its rows are copied table by table, oldest first, the
 * application switches database, and once no isolate can still be writing to the source its rows there are deleted.
 */

import { formatTimestamp } from '../time';
import { jobProgressOf, type JobProgress, type JobProgressRow } from './jobs';
import { embedModelNumber, registerEmbedModel } from './model-numbers';

/**
 * SQL: the application in `column` is not being moved out of this database. The sweeper leaves such an application's
 * rows alone: its writes would fail at the fence, and its rows will be swept in their new database.
 */
export const notMovingOut = (column: string): string => `${column} NOT IN (SELECT app_id FROM move_fences)`;

/** What a fenced write fails with (the triggers' message): its writer tries again once the application has moved. */
const FENCED = 'application moving';
export const isFencedWrite = (error: unknown): boolean => String(error instanceof Error ? error.message : error).includes(FENCED);

/**
 * The tables of an application's catalog, in an order their references allow (a row after the rows it names), each
 * with the condition that picks the application's rows (?1). Query images go last: searches keep writing them while
 * the rest holds still (their table is not fenced), so they are copied as close to the switch as can be, and again
 * before they are deleted.
 */
export const MOVED_TABLES = [
  { table: 'insert_transactions', rows: 'app_id = ?1' },
  { table: 'insert_items', rows: 'trans_id IN (SELECT id FROM insert_transactions WHERE app_id = ?1)' },
  { table: 'images', rows: 'app_id = ?1' },
  { table: 'retired_versions', rows: 'app_id = ?1' },
  { table: 'stale_vector_metadata', rows: 'app_id = ?1' },
  { table: 'reindexes', rows: 'app_id = ?1' },
  { table: 'tunings', rows: 'app_id = ?1' },
  { table: 'query_images', rows: 'app_id = ?1' },
] as const;

export const QUERY_IMAGES_TABLE = MOVED_TABLES.findIndex(({ table }) => table === 'query_images');

/** Fences the application's rows in `source`: from the commit on, none of its writes there succeeds. */
export async function fence(source: D1Database, appId: string, now: string): Promise<void> {
  await source.prepare('INSERT OR IGNORE INTO move_fences (app_id, fenced_at) VALUES (?, ?)').bind(appId, now).run();
}

export async function unfence(source: D1Database, appId: string): Promise<void> {
  await source.prepare('DELETE FROM move_fences WHERE app_id = ?').bind(appId).run();
}

/**
 * Columns holding a number of the database's own embed_models (storage/model-numbers.ts): copied as the model's id,
 * and numbered in the target by it.
 */
const MODEL_COLUMNS: Readonly<Record<string, string>> = { images: 'model' };

/**
 * Copies up to `limit` of the application's rows of table `tableIndex` after rowid `cursor` from `source` into
 * `target`, each replacing one of the same key (`ignore`: keeping it); the rowid of the last one, or null when none
 * was left.
 */
export async function copyRows(
  source: D1Database,
  target: D1Database,
  appId: string,
  tableIndex: number,
  cursor: number,
  limit: number,
  conflict: 'replace' | 'ignore' = 'replace',
): Promise<{ copied: number; cursor: number } | null> {
  const { table, rows } = MOVED_TABLES[tableIndex]!;
  const modelColumn = MODEL_COLUMNS[table];
  const modelName = modelColumn ? `, (SELECT name FROM embed_models WHERE id = ${table}.${modelColumn}) AS moved_model` : '';
  const { results } = await source
    .prepare(`SELECT rowid AS moved_rowid${modelName}, * FROM ${table} WHERE ${rows} AND rowid > ?2 ORDER BY rowid LIMIT ?3`)
    .bind(appId, cursor, limit)
    .all<Record<string, unknown>>();
  const last = results.at(-1);
  if (!last) return null;
  const models = [...new Set(results.map((row) => row.moved_model as string | undefined).filter((model) => model !== undefined))];
  const statements = results.map(({ moved_rowid: _rowid, moved_model: model, ...row }) => {
    const columns = Object.keys(row);
    const values = columns.map((column) => (column === modelColumn ? embedModelNumber('?') : '?'));
    return target
      .prepare(`INSERT OR ${conflict === 'replace' ? 'REPLACE' : 'IGNORE'} INTO ${table} (${columns.join(', ')}) VALUES (${values.join(', ')})`)
      // D1 answers a BLOB as an array of bytes, and binds one as bytes.
      .bind(...columns.map((column) => (column === modelColumn ? model : Array.isArray(row[column]) ? new Uint8Array(row[column] as number[]) : (row[column] ?? null))));
  });
  await target.batch([...models.map((model) => registerEmbedModel(target, model)), ...statements]);
  return { copied: results.length, cursor: Number(last.moved_rowid) };
}

/** Deletes up to `limit` of the application's rows of table `tableIndex` from `database`; how many went. */
export async function deleteRows(database: D1Database, appId: string, tableIndex: number, limit: number): Promise<number> {
  const { table, rows } = MOVED_TABLES[tableIndex]!;
  const { meta } = await database.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${rows} LIMIT ?2)`).bind(appId, limit).run();
  return meta.changes;
}

/** An application's latest move, as the `moves` row of the control database keeps it. */
export type MoveState = 'copying' | 'cleaning' | 'done' | 'failed';
export type Move = JobProgress & {
  appId: string;
  fromDatabase: string;
  toDatabase: string;
  state: MoveState;
  tableIndex: number;
  cursor: number;
  rowsCopied: number;
  notBefore: string | null;
};
type MoveRow = JobProgressRow & {
  app_id: string;
  from_database: string;
  to_database: string;
  state: MoveState;
  table_index: number;
  cursor: number;
  rows_copied: number;
  not_before: string | null;
};

const toMove = (row: MoveRow): Move => ({
  ...jobProgressOf(row),
  appId: row.app_id,
  fromDatabase: row.from_database,
  toDatabase: row.to_database,
  state: row.state,
  tableIndex: row.table_index,
  cursor: row.cursor,
  rowsCopied: row.rows_copied,
  notBefore: row.not_before,
});

export const MOVE_UNDER_WAY: readonly MoveState[] = ['copying', 'cleaning'];
const UNDER_WAY_SQL = `(${MOVE_UNDER_WAY.map((state) => `'${state}'`).join(', ')})`;

export async function getMove(control: D1Database, appId: string): Promise<Move | null> {
  const row = await control.prepare('SELECT * FROM moves WHERE app_id = ?').bind(appId).first<MoveRow>();
  return row && toMove(row);
}

/** Begins a move of the application to `toDatabase`: null when one is under way already. */
export async function startMove(control: D1Database, appId: string, fromDatabase: string, toDatabase: string): Promise<Move | null> {
  const now = formatTimestamp();
  const row = await control
    .prepare(
      `INSERT INTO moves (app_id, from_database, to_database, state, started_at, updated_at) VALUES (?1, ?2, ?3, 'copying', ?4, ?4)
       ON CONFLICT (app_id) DO UPDATE SET from_database = excluded.from_database, to_database = excluded.to_database, state = 'copying',
         table_index = 0, cursor = 0, rows_copied = 0, not_before = NULL, step = moves.step + 1, resumes = 0, error = NULL,
         started_at = excluded.started_at, updated_at = excluded.updated_at, finished_at = NULL
       WHERE moves.state NOT IN ${UNDER_WAY_SQL}
       RETURNING *`,
    )
    .bind(appId, fromDatabase, toDatabase, now)
    .first<MoveRow>();
  return row && toMove(row);
}

/** The changes a step makes besides moving on. */
export type MoveChange = { state?: MoveState; tableIndex?: number; cursor?: number; copied?: number; notBefore?: string; error?: string };

/** Ends step `move.step` with `change`: the next step's number, or null when another chain superseded this one. */
export async function advanceMove(control: D1Database, move: Pick<Move, 'appId' | 'step' | 'state'>, change: MoveChange = {}): Promise<number | null> {
  const now = formatTimestamp();
  const ended = change.state === 'done' || change.state === 'failed';
  const row = await control
    .prepare(
      `UPDATE moves SET step = step + 1, resumes = 0, error = ?4, updated_at = ?5, state = COALESCE(?6, state),
         table_index = COALESCE(?7, table_index), cursor = COALESCE(?8, cursor), rows_copied = rows_copied + ?9,
         not_before = COALESCE(?10, not_before), finished_at = CASE WHEN ?11 THEN ?5 ELSE finished_at END
       WHERE app_id = ?1 AND step = ?2 AND state = ?3 RETURNING step`,
    )
    .bind(
      move.appId,
      move.step,
      move.state,
      change.error ?? null,
      now,
      change.state ?? null,
      change.tableIndex ?? null,
      change.cursor ?? null,
      change.copied ?? 0,
      change.notBefore ?? null,
      ended ? 1 : 0,
    )
    .first<{ step: number }>();
  return row?.step ?? null;
}

export async function noteMoveError(control: D1Database, appId: string, error: string): Promise<void> {
  await control.prepare('UPDATE moves SET error = ? WHERE app_id = ?').bind(error, appId).run();
}

/** Moves under way that made no progress since `before`, for the sweeper to resume. */
export async function stalledMoves(control: D1Database, before: string): Promise<Move[]> {
  const { results } = await control.prepare(`SELECT * FROM moves WHERE state IN ${UNDER_WAY_SQL} AND updated_at < ?`).bind(before).all<MoveRow>();
  return results.map(toMove);
}

/** A stalled move goes on with a new chain of steps: its next step's number. */
export async function resumeMove(control: D1Database, appId: string): Promise<number | null> {
  const row = await control
    .prepare(`UPDATE moves SET step = step + 1, resumes = resumes + 1, updated_at = ? WHERE app_id = ? AND state IN ${UNDER_WAY_SQL} RETURNING step`)
    .bind(formatTimestamp(), appId)
    .first<{ step: number }>();
  return row?.step ?? null;
}

/**
 * Gives up a move that keeps stalling while it copies: the application stays where it is, its writes go on there;
 * what was copied stays in the target unread, and a later move there replaces it. Whether this gave it up.
 */
export async function failMove(control: D1Database, appId: string, error: string): Promise<boolean> {
  const now = formatTimestamp();
  const { meta } = await control
    .prepare("UPDATE moves SET state = 'failed', error = ?2, step = step + 1, updated_at = ?3, finished_at = ?3 WHERE app_id = ?1 AND state = 'copying'")
    .bind(appId, error, now)
    .run();
  return meta.changes > 0;
}
