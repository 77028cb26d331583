import type { Env } from '../env';
import { placeDatabase } from '../placement/databases';
import { DATABASE_SLOTS } from './sequence';

/** The D1 binding holding applications, keys, settings and placement (docs/decisions.md, "Placement"), and catalogs too. */
export const CONTROL_DATABASE = 'DB';

/** D1_DATABASES: the bindings catalogs are placed on, in order, the control database first; positions never change. */
export function databaseNames(env: Pick<Env, 'D1_DATABASES'>): readonly string[] {
  const names = env.D1_DATABASES.split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names[0] !== CONTROL_DATABASE) throw new Error(`D1_DATABASES must list ${CONTROL_DATABASE} first`);
  if (names.length > DATABASE_SLOTS) throw new Error(`D1_DATABASES lists more than ${DATABASE_SLOTS} databases`);
  return names;
}

/** A database's position in D1_DATABASES, part of every number it allocates (storage/sequence.ts). */
export const databasePosition = (env: Pick<Env, 'D1_DATABASES'>, name: string): number => databaseNames(env).indexOf(name);

/** A binding D1_DATABASES lists; in a request's env copy, metered as the request reads (storage/d1-meter.ts). */
export function databaseNamed(env: Env, name: string): D1Database {
  const database = (env as unknown as Record<string, D1Database | undefined>)[name];
  if (!database || !databaseNames(env).includes(name)) throw new Error(`The D1 database ${name} is not bound and listed in D1_DATABASES`);
  return database;
}

/** The database an application's catalog rows (images, transactions, versions, query images, jobs) are in. */
export const catalogDatabase = (env: Env, app: { database: string }): D1Database => databaseNamed(env, app.database);

/**
 * Each database with its applications (counted in the control database), its bytes (D1 answers each query with
 * `meta.size_after`), and what `count`, a query of one number, answers there.
 */
async function eachDatabase(env: Env, count: string): Promise<{ name: string; applications: number; counted: number; bytes: number }[]> {
  const { results } = await env.DB.prepare('SELECT database, COUNT(*) AS applications FROM apps GROUP BY database').all<{ database: string; applications: number }>();
  const applications = new Map(results.map((row) => [row.database, row.applications]));
  return Promise.all(
    databaseNames(env).map(async (name) => {
      const { results: [row], meta } = await databaseNamed(env, name).prepare(count).all<{ counted: number }>();
      return { name, applications: applications.get(name) ?? 0, counted: row!.counted, bytes: meta.size_after };
    }),
  );
}

/** Every database with its applications, images and bytes (GET /admin/placement). */
export async function databaseFills(env: Env): Promise<{ name: string; applications: number; images: number; bytes: number }[]> {
  return (await eachDatabase(env, 'SELECT COUNT(*) AS counted FROM images')).map(({ counted, ...fill }) => ({ ...fill, images: counted }));
}

/**
 * The database a new application's catalog goes to (placeDatabase: the most free bytes, its size unknown yet); null
 * when every one is full.
 */
export async function placeNewApplication(env: Env): Promise<string | null> {
  return placeDatabase(await eachDatabase(env, 'SELECT 0 AS counted'), 0);
}
