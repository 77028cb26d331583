import type { PaletteColor } from '../ports/inference/types';
import { formatTimestamp } from '../time';

/** Metadata as the schema types it: numbers for int and float fields, strings for string and text fields. */
export type ImageMetadata = Record<string, string | number>;

export type ImageRow = {
  id: number;
  im_name: string;
  im_url: string;
  metadata: ImageMetadata;
  /** Detected objects with a vector in the object index. */
  object_count: number;
};

type StoredImageRow = Omit<ImageRow, 'metadata'> & { metadata: string };

const parse = (row: StoredImageRow): ImageRow => ({ ...row, metadata: JSON.parse(row.metadata) as ImageMetadata });

export type NewImage = {
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
};

/**
 * Inserts an image or replaces every field of the one with the same name; the id (and so the vector id) is kept.
 * Returns the id and how many object vectors the replaced version had, atomically.
 */
export async function upsertImage(db: D1Database, image: NewImage): Promise<{ id: number; previousObjectCount: number }> {
  const now = formatTimestamp();
  const [previous, upserted] = await db.batch<{ id: number; object_count: number }>([
    db.prepare('SELECT id, object_count FROM images WHERE app_id = ? AND im_name = ?').bind(image.appId, image.imName),
    db
      .prepare(
        `INSERT INTO images (app_id, im_name, im_url, blob_key, format, width, height, metadata, object_count, colors, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, im_name) DO UPDATE SET
           im_url = excluded.im_url, blob_key = excluded.blob_key, format = excluded.format, width = excluded.width,
           height = excluded.height, metadata = excluded.metadata, object_count = excluded.object_count, colors = excluded.colors,
           updated_at = excluded.updated_at
         RETURNING id, object_count`,
      )
      .bind(
        image.appId,
        image.imName,
        image.imUrl,
        image.blobKey,
        image.format,
        image.width,
        image.height,
        JSON.stringify(image.metadata),
        image.objectCount,
        JSON.stringify(image.colors),
        now,
        now,
      ),
  ]);
  const id = upserted?.results[0]?.id;
  if (id === undefined) throw new Error('upsert returned no id');
  return { id, previousObjectCount: previous?.results[0]?.object_count ?? 0 };
}

export async function findImageByName(db: D1Database, appId: string, imName: string): Promise<ImageRow | null> {
  const row = await db
    .prepare('SELECT id, im_name, im_url, metadata, object_count FROM images WHERE app_id = ? AND im_name = ?')
    .bind(appId, imName)
    .first<StoredImageRow>();
  return row ? parse(row) : null;
}

/** The application's images among `ids`, keyed by id; ids of other applications or removed images are absent. */
export async function getImagesByIds(db: D1Database, appId: string, ids: number[]): Promise<Map<number, ImageRow>> {
  if (ids.length === 0) return new Map();
  // One JSON parameter instead of one per id: D1 allows 100 bound parameters per statement. CROSS JOIN keeps SQLite
  // looking the ids up one by one; given the choice it scans the application's whole (app_id, im_name) index.
  const { results } = await db
    .prepare(
      `SELECT images.id, im_name, im_url, metadata, object_count FROM json_each(?) AS wanted CROSS JOIN images ON images.id = wanted.value
       WHERE images.app_id = ?`,
    )
    .bind(JSON.stringify(ids), appId)
    .all<StoredImageRow>();
  return new Map(results.map((row) => [row.id, parse(row)]));
}

export type RemovedImage = { id: number; im_name: string; blob_key: string; object_count: number };

/** Deletes the named images from D1, which hides them from every search at once; returns what was deleted. */
export async function deleteImagesByName(db: D1Database, appId: string, names: string[]): Promise<RemovedImage[]> {
  if (names.length === 0) return [];
  const { results } = await db
    .prepare('DELETE FROM images WHERE app_id = ? AND im_name IN (SELECT value FROM json_each(?)) RETURNING id, im_name, blob_key, object_count')
    .bind(appId, JSON.stringify(names))
    .all<RemovedImage>();
  return results;
}

/** Which of `names` are in the application's collection. */
export async function existingNames(db: D1Database, appId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const { results } = await db
    .prepare('SELECT im_name FROM images WHERE app_id = ? AND im_name IN (SELECT value FROM json_each(?))')
    .bind(appId, JSON.stringify(names))
    .all<{ im_name: string }>();
  return new Set(results.map((row) => row.im_name));
}

/**
 * Merges `fields` into an image's metadata (a field given replaces the stored one, others stay), atomically, and
 * nothing else; the updated image, or null when it is no longer in the collection.
 */
export async function mergeImageMetadata(db: D1Database, appId: string, imName: string, fields: ImageMetadata): Promise<ImageRow | null> {
  const row = await db
    .prepare(
      `UPDATE images SET metadata = json_patch(metadata, ?), updated_at = ? WHERE app_id = ? AND im_name = ?
       RETURNING id, im_name, im_url, metadata, object_count`,
    )
    .bind(JSON.stringify(fields), formatTimestamp(), appId, imName)
    .first<StoredImageRow>();
  return row ? parse(row) : null;
}

export async function hasImages(db: D1Database, appId: string): Promise<boolean> {
  return (await db.prepare('SELECT 1 FROM images WHERE app_id = ? LIMIT 1').bind(appId).first()) !== null;
}
