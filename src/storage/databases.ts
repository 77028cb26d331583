import type { Env } from '../env';

/** The D1 binding holding applications, keys and settings (docs/decisions.md, "Placement"), and every catalog today. */
export const CONTROL_DATABASE = 'DB';

/** The capacity view of the databases (GET /admin/placement): each with its applications, images and bytes. */
export async function databaseFills(env: Env): Promise<{ name: string; applications: number; images: number; bytes: number }[]> {
  // D1 answers every query with the database's size after it (`meta.size_after`).
  const { results, meta } = await env.DB.prepare('SELECT (SELECT COUNT(*) FROM apps) AS applications, (SELECT COUNT(*) FROM images) AS images').all<{ applications: number; images: number }>();
  return [{ name: CONTROL_DATABASE, applications: results[0]!.applications, images: results[0]!.images, bytes: meta.size_after }];
}
