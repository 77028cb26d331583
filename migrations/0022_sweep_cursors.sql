-- Issue 45 (housekeeping that scales): where a periodic job that walks every application stopped, so that each run
-- takes the next few (src/ingest/staged-uploads.ts, deleteOrphanedStaged).
CREATE TABLE sweep_cursors (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
