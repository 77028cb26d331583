/**
 * The one sequence of operations on images (migrations/0008): insert items take its next number inside the D1 batch
 * that records them. `take` allocates a number, NUMBER_TAKEN reads it in the statements after, and
 * `forget` ends the batch: the allocator's AUTOINCREMENT remembers the last number, its rows are not needed.
 */
export const takeNumber = (db: D1Database): D1PreparedStatement => db.prepare('INSERT INTO image_ids DEFAULT VALUES');

/** The number the last takeNumber of this batch allocated, as an SQL expression. */
export const NUMBER_TAKEN = '(SELECT MAX(id) FROM image_ids)';

export const forgetNumbers = (db: D1Database): D1PreparedStatement => db.prepare('DELETE FROM image_ids');
