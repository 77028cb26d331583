-- Issue 45 (rows that stay small): an image row and its indexes hold a number for its embedding model, its colours
-- as a short string and its times as integers (docs/decisions.md, "Rows that stay small"; docs/performance.md,
-- "Bytes of D1 per image"). SQLite cannot change a column's type: the table is rebuilt, its rows converted.

-- The embedding models this database has numbers for, by their ids (src/storage/model-numbers.ts). A number means
-- something in its own database only: a row copied to another is given that database's number of the same name.
CREATE TABLE embed_models (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
INSERT OR IGNORE INTO embed_models (name)
  SELECT embed_model FROM images UNION SELECT embed_model FROM apps UNION SELECT to_model FROM reindexes;

-- colors: each colour of the palette as 8 hex digits, rrggbb and its ratio times 255 (src/storage/images.ts);
-- created_at, updated_at: milliseconds since the epoch.
CREATE TABLE images_compact (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  im_name TEXT NOT NULL,
  im_url TEXT NOT NULL,
  blob_key TEXT NOT NULL,
  format TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  object_count INTEGER NOT NULL DEFAULT 0,
  colors TEXT NOT NULL DEFAULT '',
  -- The newest model whose indexes hold this version's vectors (migrations/0012), by its number.
  model INTEGER NOT NULL REFERENCES embed_models(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (app_id, im_name)
);

-- Times were formatTimestamp's ('2026-01-31T12:00:00.000+0000', UTC): their first 23 characters are what julianday reads.
INSERT INTO images_compact (id, app_id, im_name, im_url, blob_key, format, width, height, metadata, object_count, colors, model, created_at, updated_at)
  SELECT i.id, i.app_id, i.im_name, i.im_url, i.blob_key, i.format, i.width, i.height, i.metadata, i.object_count,
    COALESCE((SELECT group_concat(lower(json_extract(c.value, '$.hex')) || printf('%02x', max(0, min(255, CAST(round(json_extract(c.value, '$.ratio') * 255) AS INTEGER)))), '')
              FROM json_each(i.colors) AS c), ''),
    (SELECT m.id FROM embed_models m WHERE m.name = i.embed_model),
    CAST(round((julianday(substr(i.created_at, 1, 23)) - 2440587.5) * 86400000) AS INTEGER),
    CAST(round((julianday(substr(i.updated_at, 1, 23)) - 2440587.5) * 86400000) AS INTEGER)
  FROM images i;

DROP TABLE images;
ALTER TABLE images_compact RENAME TO images;
CREATE INDEX images_by_app_model ON images (app_id, model, id);
CREATE INDEX images_by_app_id ON images (app_id, id);
