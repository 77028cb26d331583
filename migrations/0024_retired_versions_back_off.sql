-- Issue 45 (housekeeping that scales): retired versions are deleted oldest first, and one whose deletion keeps failing
-- waits longer each time (retry_at, the rule of src/storage/back-off.ts) instead of failing its whole batch on every
-- run (src/storage/retired.ts).
ALTER TABLE retired_versions ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE retired_versions ADD COLUMN retry_at TEXT NOT NULL DEFAULT '';
-- The sweeper takes the due records of every application, the consumer and /remove those of one.
CREATE INDEX retired_versions_due ON retired_versions (retry_at, retired_at);
DROP INDEX retired_versions_by_app;
CREATE INDEX retired_versions_by_app ON retired_versions (app_id, retry_at, retired_at);
