/**
 * Which D1 database a new application's catalog goes to (docs/decisions.md, "Placement"). Pure, so that the Worker
 * and the simulation of docs/scale.md place by the same rule.
 */

/** A D1 database as counted: its size and applications. */
export type DatabaseFill = { name: string; bytes: number; applications: number };

/** D1's ceiling on one database (docs/scale.md). */
export const D1_DATABASE_BYTES = 10 * 1000 ** 3;

/**
 * The database a new application goes to: the one with the most free bytes, counting `expectedBytes` for it; `null`
 * when it fits in none. Ties go to the first listed, the control database.
 */
export function placeDatabase(databases: readonly DatabaseFill[], expectedBytes: number, capacityBytes = D1_DATABASE_BYTES): string | null {
  let best: DatabaseFill | undefined;
  for (const database of databases) {
    if (database.bytes + expectedBytes > capacityBytes) continue;
    if (!best || database.bytes < best.bytes) best = database;
  }
  return best?.name ?? null;
}
