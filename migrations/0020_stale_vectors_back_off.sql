-- Issue 45 (housekeeping that scales): the cron sweeper takes the records of stale vector metadata oldest first, and
-- one whose rewrite keeps failing waits longer each time (retry_at) instead of coming back first on every run.
ALTER TABLE stale_vector_metadata ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';
ALTER TABLE stale_vector_metadata ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stale_vector_metadata ADD COLUMN retry_at TEXT NOT NULL DEFAULT '';
CREATE INDEX stale_vector_metadata_due ON stale_vector_metadata (retry_at, recorded_at);
