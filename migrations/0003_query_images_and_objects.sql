-- Query images of /uploadsearch and /discoversearch, kept so later calls can send im_id instead of the file.
CREATE TABLE query_images (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  blob_key TEXT NOT NULL,
  format TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  created_at TEXT NOT NULL
);

-- How many detected objects of the image are in the object index (ids `<image id>.<k>`, k < object_count).
ALTER TABLE images ADD COLUMN object_count INTEGER NOT NULL DEFAULT 0;
