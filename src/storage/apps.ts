import type { DetectVocabulary, VocabularyType } from '@edge-image-search/contract/wire';
import type { Env } from '../env';
import { formatTimestamp } from '../time';
import { APP_CACHE_ENTRIES, AppCache, appCacheTtlMs } from './app-cache';
import { catalogDatabase, CONTROL_DATABASE, databaseNamed, databasePosition } from './databases';
import { notePlacement, type Placement } from './placement';
import { forgetNumbers, numberTaken, takeNumber } from './sequence';
import { isCarriedByVectors } from './vector-metadata';

export const FIELD_TYPES = ['string', 'int', 'float', 'text'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type SchemaField = { name: string; type: FieldType; searchable: boolean };

/**
 * Operator limits of an application; null means unlimited. `searchesPerMinute` and `uploadBytesPerMinute` bound
 * its calls of the searches and `/image`, and the bytes of its query images, uploaded or downloaded (search/quota.ts).
 */
export type AppLimits = {
  imageLimit: number | null;
  pendingLimit: number | null;
  searchesPerMinute: number | null;
  uploadBytesPerMinute: number | null;
};
export type TextOperator = 'AND' | 'OR';
export type AppRecord = {
  id: string;
  name: string;
  accessKey: string;
  createdAt: string;
  limits: AppLimits;
  /** The operator between adjacent words of a text `fq`. */
  textDefaultOperator: TextOperator;
  /** The embedding model the application's vectors belong to: queries are embedded by it (storage/embed-models.ts). */
  embedModel: string;
  /** Its own detectable types (docs/decisions.md, "Product types and attributes"); null: the service's defaults. */
  productTypes: VocabularyType[] | null;
  /**
   * The version of the tuning its searches use (docs/decisions.md, "Tuning on a label field"): query vectors are
   * projected by it and search its model's tuned indexes; null: untuned.
   */
  tuning: number | null;
  /** Where its shards live (storage/placement.ts); null: made before placement, in each group's first index. */
  placement: Placement | null;
  /** The D1 binding its catalog rows are in (storage/databases.ts). */
  database: string;
};
/** What is stored of a new application's keys: the secret key and the app key only as digests (auth/keys.ts). */
export type NewApp = { id: string; name: string; accessKey: string; secretKeyHash: string; appKeyHash: string };

type AppRow = {
  id: string;
  name: string;
  access_key: string;
  secret_key_hash: string;
  created_at: string;
  image_limit: number | null;
  pending_limit: number | null;
  searches_per_minute: number | null;
  upload_bytes_per_minute: number | null;
  text_default_operator: TextOperator;
  embed_model: string;
  product_types: string | null;
  tuning: number | null;
  placement: string | null;
  database: string;
};

const toRecord = (row: AppRow): AppRecord => ({
  id: row.id,
  name: row.name,
  accessKey: row.access_key,
  createdAt: row.created_at,
  limits: {
    imageLimit: row.image_limit,
    pendingLimit: row.pending_limit,
    searchesPerMinute: row.searches_per_minute,
    uploadBytesPerMinute: row.upload_bytes_per_minute,
  },
  textDefaultOperator: row.text_default_operator,
  embedModel: row.embed_model,
  productTypes: productTypesOf(row.product_types),
  tuning: row.tuning,
  placement: row.placement === null ? null : (JSON.parse(row.placement) as Placement),
  database: row.database,
});

/** The `product_types` column as stored (JSON, written by setProductTypes); null: the service's defaults. */
export const productTypesOf = (column: string | null): VocabularyType[] | null =>
  column === null ? null : (JSON.parse(column) as VocabularyType[]);

/** An application's types as the inference service reads them; absent: the service's default types. */
export const vocabularyOf = (app: Pick<AppRecord, 'productTypes'>): DetectVocabulary | undefined =>
  app.productTypes ? { types: app.productTypes } : undefined;

/** Sets an application's own detectable types, or (null) gives it the service's defaults again. */
export async function setProductTypes(db: D1Database, appId: string, types: VocabularyType[] | null): Promise<void> {
  await db.prepare('UPDATE apps SET product_types = ? WHERE id = ?').bind(types === null ? null : JSON.stringify(types), appId).run();
  forgetApp(appId);
}

/**
 * A new application, on `embedModel`, its shards where `placement` says and its catalog in `database`. A catalog
 * database other than the control one gets a row of the application too, first: only the target of its catalog
 * tables' foreign keys (their rows go when it is deleted), holding no key nor setting, never read.
 */
export async function createApp(env: Env, app: NewApp, embedModel: string, placement: Placement, database: string): Promise<void> {
  const createdAt = formatTimestamp();
  await anchorApp(env, database, app.id, embedModel, createdAt);
  await env.DB.prepare(
    'INSERT INTO apps (id, name, access_key, secret_key_hash, app_key_hash, embed_model, placement, database, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
    .bind(app.id, app.name, app.accessKey, app.secretKeyHash, app.appKeyHash, embedModel, JSON.stringify(placement), database, createdAt)
    .run();
}

/**
 * In a catalog database other than the control one, the application's row that its catalog's foreign keys name: no
 * key, no setting, never read.
 */
export async function anchorApp(env: Env, database: string, appId: string, embedModel: string, createdAt: string): Promise<void> {
  if (database === CONTROL_DATABASE) return;
  await databaseNamed(env, database)
    .prepare("INSERT OR IGNORE INTO apps (id, name, access_key, secret_key_hash, app_key_hash, embed_model, database, created_at) VALUES (?1, '', ?1, '', ?1, ?2, ?3, ?4)")
    .bind(appId, embedModel, database, createdAt)
    .run();
}

/** Deletes the anchor row of an application that left `database` (its catalog rows there gone first). */
export async function unanchorApp(env: Env, database: string, appId: string): Promise<void> {
  if (database === CONTROL_DATABASE) return;
  await databaseNamed(env, database).prepare('DELETE FROM apps WHERE id = ?').bind(appId).run();
}

/** The application's catalog is in `database` from now on (ingest/move.ts, once every row is there). */
export async function setAppDatabase(control: D1Database, appId: string, database: string): Promise<void> {
  await control.prepare('UPDATE apps SET database = ? WHERE id = ?').bind(database, appId).run();
  forgetApp(appId);
}

export async function getApp(db: D1Database, id: string): Promise<AppRecord | null> {
  const row = await db.prepare('SELECT * FROM apps WHERE id = ?').bind(id).first<AppRow>();
  return row ? toRecord(row) : null;
}

/**
 * A field as stored: `carried` when every image's vectors carry its values (vectorMetadata), so that the vector index
 * may filter on it; not so from the moment vectors begin to carry it while images hold values for it (made
 * searchable, or turned from text), until each of them is inserted again (migrations/0013).
 */
export type StoredField = SchemaField & { carried: boolean };

type SchemaRow = { name: string; type: FieldType; searchable: number; carried_from: number | null };

/** The columns an application is found by. */
type AppKeyColumn = 'id' | 'access_key' | 'app_key_hash';

/** The fields of the application whose `column` is `value`, from the control database. */
function schemaStatement(db: D1Database, column: AppKeyColumn, value: string): D1PreparedStatement {
  return db
    .prepare(`SELECT name, type, searchable, carried_from FROM app_fields WHERE app_id = (SELECT id FROM apps WHERE ${column} = ?) ORDER BY name`)
    .bind(value);
}

/**
 * The fields with whether vectors carry each: a field carried from a number of the sequence is carried once the
 * application's oldest image came after it. That image is in the catalog's database, so it is looked up (one more
 * round trip) only when a field is carried from a number, not from the beginning.
 */
async function toSchema(env: Env, app: { id: string; database: string }, rows: SchemaRow[]): Promise<StoredField[]> {
  const oldest = rows.some((row) => (row.carried_from ?? 0) > 0)
    ? await catalogDatabase(env, app).prepare('SELECT min(id) AS id FROM images WHERE app_id = ?').bind(app.id).first<number | null>('id')
    : null;
  return rows.map((row) => ({
    name: row.name,
    type: row.type,
    searchable: row.searchable === 1,
    carried: row.carried_from !== null && row.carried_from <= (oldest ?? row.carried_from),
  }));
}

/** The schema as stored now, for writes and the admin API (searches read the calling application's copy). */
export async function getSchema(env: Env, app: { id: string; database: string }): Promise<StoredField[]> {
  const { results } = await schemaStatement(env.DB, 'id', app.id).all<SchemaRow>();
  return toSchema(env, app, results);
}

/**
 * An application as a request finds it: its record, its secret key's digest (Basic auth) and its schema, read in
 * one round trip and kept in the isolate for APP_CACHE_TTL_MS (storage/app-cache.ts).
 */
export type CallingApp = {
  app: AppRecord;
  secretKeyHash: string;
  schema: StoredField[];
  /** Read from D1 by this call rather than taken from the isolate's copy: the schema is then as stored. */
  readNow?: true;
};

const callingApps = new AppCache<CallingApp>(APP_CACHE_ENTRIES);
const cacheKey = (column: AppKeyColumn, value: string): string => `${column}:${value}`;

/**
 * The application whose `column` is `value`, from the isolate's copy or else read with its schema in one batch.
 * An unknown key is not kept: it costs a read each time, and a stream of made-up keys cannot push real
 * applications out of the cache.
 */
async function findCallingApp(env: Env, column: AppKeyColumn, value: string): Promise<CallingApp | null> {
  const key = cacheKey(column, value);
  const cached = callingApps.get(key);
  if (cached) return cached;
  const mark = callingApps.mark();
  const [apps, fields] = await env.DB.batch([env.DB.prepare(`SELECT * FROM apps WHERE ${column} = ?`).bind(value), schemaStatement(env.DB, column, value)]);
  const row = apps?.results[0] as AppRow | undefined;
  if (!row) return null;
  const app = toRecord(row);
  const found = { app, secretKeyHash: row.secret_key_hash, schema: await toSchema(env, app, (fields?.results ?? []) as SchemaRow[]) };
  notePlacement(row.id, app.placement);
  callingApps.keep([key], row.id, found, appCacheTtlMs(env), mark);
  return { ...found, readNow: true };
}

/** The application and its secret's digest, for Basic auth. */
export const findAppByAccessKey = (env: Env, accessKey: string): Promise<CallingApp | null> =>
  findCallingApp(env, 'access_key', accessKey);

/** The application whose app key has this digest. */
export const findAppByAppKeyHash = (env: Env, appKeyHash: string): Promise<CallingApp | null> =>
  findCallingApp(env, 'app_key_hash', appKeyHash);

/** The application changed (keys, settings, schema, model): this isolate forgets it at once, others within the TTL. */
export const forgetApp = (appId: string): void => callingApps.forget(appId);

export type AppSettings = Partial<AppLimits> & { textDefaultOperator?: TextOperator | undefined };

export async function updateSettings(db: D1Database, appId: string, settings: AppSettings): Promise<void> {
  const columns = {
    image_limit: settings.imageLimit,
    pending_limit: settings.pendingLimit,
    searches_per_minute: settings.searchesPerMinute,
    upload_bytes_per_minute: settings.uploadBytesPerMinute,
    text_default_operator: settings.textDefaultOperator,
  };
  const changes = Object.entries(columns).filter(([, value]) => value !== undefined);
  if (changes.length === 0) return;
  await db
    .prepare(`UPDATE apps SET ${changes.map(([column]) => `${column} = ?`).join(', ')} WHERE id = ?`)
    .bind(...changes.map(([, value]) => value), appId)
    .run();
  forgetApp(appId);
}

/**
 * A field vectors carried before and still carry keeps its `carried_from`. One they begin to carry is carried by
 * every vector at once (0) when no image and no pending insert or update of the application has a value for it, as
 * for a field just added; otherwise it takes a number of the image sequence, above every version accepted before, so
 * that only versions accepted after (whose vectors the consumer writes with the schema it reads then) count as
 * carrying it. The fields are in the control database, the images and the sequence in the catalog's: so the fields
 * are written first, such a field not carried yet (NULL: a filter on it is applied in D1), and only then are the
 * number taken and the values looked for, in one batch of the catalog's database. A version accepted after the
 * fields' write is written with the new schema whatever its number, so a number taken after that write is safe;
 * a failure in between leaves the field not carried, which only costs filters speed until the schema is sent again.
 */
export async function replaceSchema(env: Env, app: { id: string; database: string }, fields: SchemaField[]): Promise<void> {
  const db = env.DB;
  const stored = '(SELECT carried_from FROM app_fields WHERE app_id = ?1 AND name = ?2)';
  await db.batch([
    db.prepare('DELETE FROM app_fields WHERE app_id = ? AND name NOT IN (SELECT value FROM json_each(?))').bind(app.id, JSON.stringify(fields.map((field) => field.name))),
    ...fields.map((field) =>
      db
        .prepare(
          `INSERT INTO app_fields (app_id, name, type, searchable, carried_from)
           SELECT ?1, ?2, ?3, ?4, CASE WHEN ?5 THEN ${stored} END
           WHERE true
           ON CONFLICT (app_id, name) DO UPDATE SET type = excluded.type, searchable = excluded.searchable, carried_from = excluded.carried_from`,
        )
        .bind(app.id, field.name, field.type, field.searchable ? 1 : 0, isCarriedByVectors(field) ? 1 : 0),
    ),
  ]);
  forgetApp(app.id);
  const carried = fields.filter(isCarriedByVectors);
  if (carried.length === 0) return;
  const catalog = catalogDatabase(env, app);
  const hasValues = `EXISTS (SELECT 1 FROM images WHERE app_id = ?1 AND json_type(metadata, ?2) IS NOT NULL)
    OR EXISTS (SELECT 1 FROM insert_items JOIN insert_transactions ON insert_transactions.id = insert_items.trans_id
               WHERE insert_transactions.app_id = ?1 AND insert_items.state = 'pending' AND json_type(insert_items.metadata, ?2) IS NOT NULL)`;
  const [, ...found] = await catalog.batch<{ carried_from: number }>([
    takeNumber(catalog),
    ...carried.map((field) =>
      catalog
        .prepare(`SELECT CASE WHEN ${hasValues} THEN ${numberTaken(databasePosition(env, app.database))} ELSE 0 END AS carried_from`)
        // Field names hold no quote (admin/bodies.ts), so the JSON path needs no escaping.
        .bind(app.id, `$."${field.name}"`),
    ),
    forgetNumbers(catalog),
  ]);
  await db.batch(
    carried.map((field, k) =>
      db.prepare('UPDATE app_fields SET carried_from = ? WHERE app_id = ? AND name = ? AND carried_from IS NULL').bind(found[k]!.results[0]!.carried_from, app.id, field.name),
    ),
  );
  forgetApp(app.id);
}
