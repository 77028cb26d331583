-- The D1 binding (D1_DATABASES) holding each application's catalog rows (docs/decisions.md, "Placement"), chosen at
-- creation by free bytes. Applications made before it are in DB, the control database, which held every catalog.
ALTER TABLE apps ADD COLUMN database TEXT NOT NULL DEFAULT 'DB';
