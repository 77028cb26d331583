-- Issue 34: metadata-only updates whose vectors are not yet rewritten, and what a reindex's retire pass waits for.

-- An attempt (`attempt`, a token of its own: two deliveries of one update may run at once) of a metadata-only update
-- (the insert item trans_id, item_index) merged into version image_id's D1 row and has not yet given its vectors the
-- new metadata: recorded in the merge's batch, deleted in the batch that settles the item. One left by an update given
-- up is rewritten from D1 by the cron sweeper. While one is held, the version's vectors may be being written, so a
-- retired version's are not deleted yet (the write would bring them back), nor a reindex's old model emptied.
CREATE TABLE stale_vector_metadata (
  attempt TEXT PRIMARY KEY,
  trans_id INTEGER NOT NULL,
  item_index INTEGER NOT NULL,
  image_id INTEGER NOT NULL,
  app_id TEXT NOT NULL
);
CREATE INDEX stale_vector_metadata_by_image ON stale_vector_metadata (image_id);
CREATE INDEX stale_vector_metadata_by_app ON stale_vector_metadata (app_id);

-- The last item number of the application pending when it moved to to_model: an insert up to it may have written
-- from_model's vectors and apply later, so the retire pass begins once none is pending.
ALTER TABLE reindexes ADD COLUMN switch_seq INTEGER;
