-- Moving an application's catalog to another database (docs/decisions.md, "Placement"). In every database: a fence
-- per application being moved out of it. While it stands, writes of that application's rows (INSERT, UPDATE) are
-- refused by the triggers below, so that its rows hold still while they are copied; whoever wrote retries once the
-- application is on its new database. Deletes pass: what they remove here is removed again there, or is already gone.
-- Query images are not fenced: searches keep storing them (src/storage/moves.ts copies them last, and again).
CREATE TABLE move_fences (
  app_id TEXT PRIMARY KEY,
  fenced_at TEXT NOT NULL
);

CREATE TRIGGER images_fenced_insert BEFORE INSERT ON images WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER images_fenced_update BEFORE UPDATE ON images WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER insert_transactions_fenced_insert BEFORE INSERT ON insert_transactions WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER insert_transactions_fenced_update BEFORE UPDATE ON insert_transactions WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER insert_items_fenced_insert BEFORE INSERT ON insert_items
WHEN EXISTS (SELECT 1 FROM move_fences JOIN insert_transactions ON insert_transactions.app_id = move_fences.app_id WHERE insert_transactions.id = NEW.trans_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER insert_items_fenced_update BEFORE UPDATE ON insert_items
WHEN EXISTS (SELECT 1 FROM move_fences JOIN insert_transactions ON insert_transactions.app_id = move_fences.app_id WHERE insert_transactions.id = NEW.trans_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER retired_versions_fenced_insert BEFORE INSERT ON retired_versions WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER retired_versions_fenced_update BEFORE UPDATE ON retired_versions WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER reindexes_fenced_insert BEFORE INSERT ON reindexes WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER reindexes_fenced_update BEFORE UPDATE ON reindexes WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER tunings_fenced_insert BEFORE INSERT ON tunings WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER tunings_fenced_update BEFORE UPDATE ON tunings WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER stale_vector_metadata_fenced_insert BEFORE INSERT ON stale_vector_metadata WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;
CREATE TRIGGER stale_vector_metadata_fenced_update BEFORE UPDATE ON stale_vector_metadata WHEN EXISTS (SELECT 1 FROM move_fences WHERE app_id = NEW.app_id)
BEGIN SELECT RAISE(ABORT, 'application moving'); END;

-- The copy reads each table by application, oldest row first.
CREATE INDEX insert_transactions_by_app ON insert_transactions (app_id, id);
CREATE INDEX query_images_by_app ON query_images (app_id);

-- In the control database: each application's latest move, a job of the admin jobs' shape (src/ingest/job-step.ts).
CREATE TABLE moves (
  app_id TEXT PRIMARY KEY,
  from_database TEXT NOT NULL,
  to_database TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('copying', 'cleaning', 'done', 'failed')),
  -- The table being copied or cleaned (its place in src/storage/moves.ts's list) and the last rowid done in it.
  table_index INTEGER NOT NULL DEFAULT 0,
  cursor INTEGER NOT NULL DEFAULT 0,
  rows_copied INTEGER NOT NULL DEFAULT 0,
  -- A phase that must not begin before this time (ISO): isolates' cached copies of the application expire first.
  not_before TEXT,
  step INTEGER NOT NULL DEFAULT 0,
  resumes INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);
