-- Issue 38: an image sent as a file to /insert (`image[i]`) waits in R2 under staged_key until its item settles; the
-- key is cleared once the staged object is deleted, so the cron sweeper deletes what a settled item left.
ALTER TABLE insert_items ADD COLUMN staged_key TEXT;
CREATE INDEX insert_items_staged ON insert_items (state) WHERE staged_key IS NOT NULL;
