-- Versions of an image, so that an insert is all or nothing and a later operation on a name always wins.
--
-- Every accepted insert item gets its own number from one allocator, in the order the items were accepted. The
-- number is the id of the version an image item makes: its vectors (`<id>`, `<id>.<k>`) and its bytes are written under it before
-- the version becomes the image's, by one D1 batch that replaces the row only with a newer id, so a search sees the
-- old version or the new one, never a mix. The id doubles as the item's sequence: a remove takes one too, and an
-- insert item older than a remove of its name, or than the version in place, is not applied.
CREATE TABLE image_ids (id INTEGER PRIMARY KEY AUTOINCREMENT);
-- Ids so far came from images' own AUTOINCREMENT: the allocator goes on above them.
INSERT INTO image_ids (id) SELECT MAX(id) FROM images HAVING MAX(id) IS NOT NULL;
DELETE FROM image_ids;

-- The item's place in the order of operations, from the allocator; for an image item also the id of the version it
-- makes (a metadata-only update changes the version in place).
ALTER TABLE insert_items ADD COLUMN seq INTEGER;
-- When a consumer last started on the item: the sweeper tells an item in work that stalled from one still queued.
ALTER TABLE insert_items ADD COLUMN started_at TEXT;
CREATE INDEX insert_items_started ON insert_items (started_at);
CREATE INDEX insert_items_by_name ON insert_items (im_name, state);

-- A remove of a name, with its sequence: insert items of that name accepted before it are not applied.
CREATE TABLE removals (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  im_name TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (app_id, im_name)
);

-- Versions no longer wanted (replaced, removed, or superseded before they were applied) whose vectors and bytes
-- are still to be deleted: recorded in the same batch that retires them, deleted after it, again by the cron sweeper
-- if that fails.
CREATE TABLE retired_versions (
  image_id INTEGER PRIMARY KEY,
  app_id TEXT NOT NULL,
  object_count INTEGER NOT NULL,
  blob_key TEXT NOT NULL,
  retired_at TEXT NOT NULL
);
