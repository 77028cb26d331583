-- Per-application limits per minute, set by the operator through the admin API; NULL means none.
-- searches_per_minute: calls of the search endpoints; upload_bytes_per_minute: bytes of uploaded query images.
ALTER TABLE apps ADD COLUMN searches_per_minute INTEGER;
ALTER TABLE apps ADD COLUMN upload_bytes_per_minute INTEGER;

-- What an application used in one minute (window: minutes since the epoch), counted only while it has a limit.
CREATE TABLE usage_windows (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  window INTEGER NOT NULL,
  searches INTEGER NOT NULL DEFAULT 0,
  upload_bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, window)
);

-- Query images expire (src/storage/query-images.ts): the sweeper finds them by age.
CREATE INDEX query_images_created ON query_images (created_at);
