/**
 * The one sequence of operations on images (migrations/0008): insert items take its next number inside the D1 batch
 * that records them. `take` allocates a number, NUMBER_TAKEN reads it in the statements after, and
 * `forget` ends the batch: the allocator's AUTOINCREMENT remembers the last number, its rows are not needed.
 */
export const takeNumber = (db: D1Database): D1PreparedStatement => db.prepare('INSERT INTO image_ids DEFAULT VALUES');

/**
 * Numbers are image (and vector) ids, and the vector indexes are shared by every database: so each database's numbers
 * are its allocator's count times DATABASE_SLOTS plus its position in D1_DATABASES (storage/databases.ts), unique
 * across databases, and above every number of before (the count itself) in the control database.
 */
export const DATABASE_SLOTS = 1024;

/** The number the last takeNumber of this batch allocated in the database at `position`, as an SQL expression. */
export const numberTaken = (position: number): string => `((SELECT MAX(id) FROM image_ids) * ${DATABASE_SLOTS} + ${position})`;

export const forgetNumbers = (db: D1Database): D1PreparedStatement => db.prepare('DELETE FROM image_ids');

/**
 * Raises `target`'s count above `source`'s, so that every number `target` allocates from now is above every number
 * `source` allocated: an application moved between them keeps the order of its operations. AUTOINCREMENT keeps the
 * highest count ever used, so the row inserted here can go at once.
 */
export async function raiseSequence(source: D1Database, target: D1Database): Promise<void> {
  const count = await source.prepare("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'image_ids'), 0) AS count").first<number>('count');
  await target.batch([target.prepare('INSERT OR IGNORE INTO image_ids (id) VALUES (?)').bind((count ?? 0) + 1), forgetNumbers(target)]);
}
