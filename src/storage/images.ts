import type { PaletteColor } from '../ports/inference/types';
import { couldNameImage } from './image-name';
import type { ImageMetadata } from './metadata';
import { embedModelNumber, registerEmbedModel } from './model-numbers';
import { retireLiveVersions, retireUnlessLive } from './retired';
import { recordStaleVectors } from './stale-vectors';
import { cancelPendingItems, itemPending } from './transactions';

export type ImageRow = {
  id: number;
  im_name: string;
  im_url: string;
  metadata: ImageMetadata;
  /** Detected objects with a vector in the object index. */
  object_count: number;
  /** Where the version's bytes are in R2. */
  blob_key: string;
};

type StoredImageRow = Omit<ImageRow, 'metadata'> & { metadata: string };

const parse = <Row extends { metadata: string }>(row: Row): Omit<Row, 'metadata'> & { metadata: ImageMetadata } => ({
  ...row,
  metadata: JSON.parse(row.metadata) as ImageMetadata,
});

/** A version of an image, written under its id (the insert item's `seq`) before it becomes the image's. */
export type ImageVersion = {
  id: number;
  appId: string;
  imName: string;
  imUrl: string;
  blobKey: string;
  format: string;
  width: number;
  height: number;
  metadata: ImageMetadata;
  objectCount: number;
  colors: PaletteColor[];
  /** The newest embedding model its vectors were written in (storage/reindexes.ts). */
  embedModel: string;
};

/** A palette as an image row keeps it (migrations/0023): each colour as rrggbb and its ratio times 255, in hex. */
const compactColors = (colors: PaletteColor[]): string =>
  colors.map(({ hex, ratio }) => `${hex.toLowerCase()}${Math.round(Math.min(1, Math.max(0, ratio)) * 255).toString(16).padStart(2, '0')}`).join('');

/**
 * Makes `version` the image's, in one batch with `alongside` (the settling of `item`, the insert item that made it):
 * only over an older version and while the item is pending, so a later operation always wins whatever order items
 * finish in: a later insert by its higher id, a later remove by having settled the item already
 * (cancelPendingItems). The version replaced, or the new one when it lost, is retired in the same batch
 * (retired_versions), so its vectors and bytes are deleted by a retryable path.
 */
export async function applyVersion(
  db: D1Database,
  version: ImageVersion,
  item: { transId: number; index: number },
  alongside: D1PreparedStatement[],
): Promise<void> {
  const { id, appId, imName } = version;
  await db.batch([
    registerEmbedModel(db, version.embedModel),
    retireLiveVersions(db, `app_id = ? AND im_name = ? AND id < ? AND ${itemPending()}`, appId, imName, id, item.transId, item.index),
    db
      .prepare(
        `INSERT INTO images (id, app_id, im_name, im_url, blob_key, format, width, height, metadata, object_count, colors, model, created_at, updated_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ${embedModelNumber('?13')}, ?12, ?12
         WHERE ${itemPending('?14', '?15')}
         ON CONFLICT (app_id, im_name) DO UPDATE SET
           id = excluded.id, im_url = excluded.im_url, blob_key = excluded.blob_key, format = excluded.format,
           width = excluded.width, height = excluded.height, metadata = excluded.metadata,
           object_count = excluded.object_count, colors = excluded.colors, model = excluded.model,
           updated_at = excluded.updated_at
         WHERE excluded.id > images.id`,
      )
      .bind(id, appId, imName, version.imUrl, version.blobKey, version.format, version.width, version.height, JSON.stringify(version.metadata), version.objectCount, compactColors(version.colors), Date.now(), version.embedModel, item.transId, item.index),
    retireUnlessLive(db, version),
    ...alongside,
  ]);
}

/**
 * An image row's metadata, narrowed in the database to the fields of the JSON array bound as `param` (`[]`: none;
 * NULL: all), so that what a search holds is bounded by the fields its parameters need, whatever the size of the
 * catalog's metadata (docs/decisions.md). json_each matches field names as they are, with no JSON path to escape.
 */
const narrowedMetadata = (param: string): string =>
  `CASE WHEN ${param} IS NULL THEN images.metadata WHEN ${param} = '[]' THEN '{}' ELSE
     (SELECT json_group_object(key, value) FROM json_each(images.metadata) WHERE key IN (SELECT value FROM json_each(${param})))
   END AS metadata`;

/** Which metadata fields a read returns: those named, or `all`. */
export type MetadataFields = readonly string[] | 'all';
const fieldsParam = (fields: MetadataFields): string | null => (fields === 'all' ? null : JSON.stringify(fields));

/** The named image; null for a name no image can have, which is not looked up. */
export async function findImageByName(db: D1Database, appId: string, imName: string, fields: MetadataFields): Promise<ImageRow | null> {
  if (!couldNameImage(imName)) return null;
  const row = await db
    .prepare(`SELECT id, im_name, im_url, ${narrowedMetadata('?3')}, object_count, blob_key FROM images WHERE app_id = ?1 AND im_name = ?2`)
    .bind(appId, imName, fieldsParam(fields))
    .first<StoredImageRow>();
  return row ? parse(row) : null;
}

/** What a search reads of a candidate image: its metadata narrowed to the fields asked for. */
export type ImageSummary = Pick<ImageRow, 'id' | 'im_name' | 'object_count' | 'metadata'>;

/** The application's images among `ids`, keyed by id, with the metadata `fields`; other applications' or removed images are absent. */
export async function getImagesByIds(db: D1Database, appId: string, ids: number[], fields: MetadataFields): Promise<Map<number, ImageSummary>> {
  if (ids.length === 0) return new Map();
  // One JSON parameter instead of one per id: D1 allows 100 bound parameters per statement. CROSS JOIN keeps SQLite
  // looking the ids up one by one; given the choice it scans the application's whole (app_id, im_name) index.
  const { results } = await db
    .prepare(
      `SELECT images.id, im_name, object_count, ${narrowedMetadata('?3')}
       FROM json_each(?1) AS wanted CROSS JOIN images ON images.id = wanted.value
       WHERE images.app_id = ?2`,
    )
    .bind(JSON.stringify(ids), appId, fieldsParam(fields))
    .all<Omit<ImageSummary, 'metadata'> & { metadata: string }>();
  return new Map(results.map((row) => [row.id, parse(row)]));
}

/**
 * Removes the named images from D1, which hides them from every search at once, and in the same batch fails every
 * insert item of those names still pending, which is then never applied (cancelPendingItems), and retires the removed
 * versions, whose vectors and bytes are deleted after (retired_versions). Returns the names removed: those in the
 * collection and those only waiting to be inserted (docs/decisions.md, "Removal and order"); names no image can have
 * are not looked up.
 */
export async function removeImages(db: D1Database, appId: string, names: string[]): Promise<string[]> {
  const possible = [...new Set(names.filter(couldNameImage))];
  if (possible.length === 0) return [];
  const wanted = JSON.stringify(possible);
  const [, cancelled, , deleted] = await db.batch<{ im_name: string }>([
    ...cancelPendingItems(db, appId, wanted),
    retireLiveVersions(db, 'app_id = ? AND im_name IN (SELECT value FROM json_each(?))', appId, wanted),
    db.prepare('DELETE FROM images WHERE app_id = ? AND im_name IN (SELECT value FROM json_each(?)) RETURNING im_name').bind(appId, wanted),
  ]);
  return [...new Set([...(cancelled?.results ?? []), ...(deleted?.results ?? [])].map((row) => row.im_name))];
}

/** Which of `names` are in the application's collection. */
export async function existingNames(db: D1Database, appId: string, names: string[]): Promise<Set<string>> {
  const possible = names.filter(couldNameImage);
  if (possible.length === 0) return new Set();
  const { results } = await db
    .prepare('SELECT im_name FROM images WHERE app_id = ? AND im_name IN (SELECT value FROM json_each(?))')
    .bind(appId, JSON.stringify(possible))
    .all<{ im_name: string }>();
  return new Set(results.map((row) => row.im_name));
}

/**
 * Merges an update's fields into the metadata of its image's version older than it (a field given replaces the
 * stored one, others stay), atomically, and records that the version's vectors are to be rewritten
 * (storage/stale-vectors.ts), under `attempt`. Only while the update is pending: a redelivery of it settled meanwhile must not merge
 * again over a later update. `superseded`: the version in place came after the update, which then changes nothing;
 * `missing`: the image is not in the collection.
 */
export async function mergeImageMetadata(
  db: D1Database,
  item: { appId: string; imName: string; metadata: ImageMetadata; seq: number; transId: number; index: number },
  attempt: string,
): Promise<{ kind: 'merged'; image: ImageRow } | { kind: 'superseded' | 'missing' }> {
  const target = `app_id = ? AND im_name = ? AND id < ? AND ${itemPending()}`;
  const values = [item.appId, item.imName, item.seq, item.transId, item.index];
  const [, merged, current] = await db.batch<StoredImageRow>([
    recordStaleVectors(db, attempt, item, target, ...values),
    db
      .prepare(
        `UPDATE images SET metadata = json_patch(metadata, ?), updated_at = ? WHERE ${target}
         RETURNING id, im_name, im_url, metadata, object_count, blob_key`,
      )
      .bind(JSON.stringify(item.metadata), Date.now(), ...values),
    db.prepare('SELECT id FROM images WHERE app_id = ? AND im_name = ?').bind(item.appId, item.imName),
  ]);
  const row = merged?.results[0];
  if (row) return { kind: 'merged', image: parse(row) };
  return { kind: (current?.results.length ?? 0) > 0 ? 'superseded' : 'missing' };
}

export async function hasImages(db: D1Database, appId: string): Promise<boolean> {
  return (await db.prepare('SELECT 1 FROM images WHERE app_id = ? LIMIT 1').bind(appId).first()) !== null;
}

/** A page of an application's catalog and how many images it holds. */
export type CatalogPage = { total: number; images: Pick<ImageRow, 'im_name' | 'metadata'>[] };

/**
 * One page of the application's images, the latest written first (the (app_id, id) index, so OFFSET walks the
 * index, not a sort), with the metadata `fields`, and the count of all of them: two statements in one round trip,
 * whose memory is the page's, whatever the catalog's size.
 */
export async function listImages(db: D1Database, appId: string, page: { page: number; limit: number }, fields: MetadataFields): Promise<CatalogPage> {
  const [counted, listed] = await db.batch([
    db.prepare('SELECT COUNT(*) AS total FROM images WHERE app_id = ?').bind(appId),
    db
      .prepare(`SELECT im_name, ${narrowedMetadata('?4')} FROM images WHERE app_id = ?1 ORDER BY id DESC LIMIT ?2 OFFSET ?3`)
      .bind(appId, page.limit, (page.page - 1) * page.limit, fieldsParam(fields)),
  ]);
  const total = (counted?.results[0] as { total: number } | undefined)?.total ?? 0;
  const rows = (listed?.results ?? []) as { im_name: string; metadata: string }[];
  return { total, images: rows.map(parse) };
}
