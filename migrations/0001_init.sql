-- Applications ("the dashboard"): keys are looked up by their public part; secrets are stored as SHA-256 hashes.
CREATE TABLE apps (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  access_key TEXT NOT NULL UNIQUE,
  secret_key_hash TEXT NOT NULL,
  app_key_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
);

-- The application's metadata schema (spec 2.2).
CREATE TABLE app_fields (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('string', 'int', 'float', 'text')),
  searchable INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, name)
);

-- The collection. The integer id doubles as the vector id: Vectorize ids are at most 64 bytes, im_name may be 128.
CREATE TABLE images (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  im_name TEXT NOT NULL,
  im_url TEXT NOT NULL,
  blob_key TEXT NOT NULL,
  format TEXT NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (app_id, im_name)
);

-- The id (trans_id) is made by the Worker, below 2^53, so the transaction and its items go in one atomic batch.
CREATE TABLE insert_transactions (
  id INTEGER PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  total INTEGER NOT NULL,
  start_time TEXT NOT NULL,
  update_time TEXT NOT NULL
);

-- One row per accepted image: the queue message carries only (trans_id, item_index), so metadata of any
-- size survives the 128 KB message cap, and a redelivered message finds its item no longer pending.
CREATE TABLE insert_items (
  trans_id INTEGER NOT NULL REFERENCES insert_transactions(id) ON DELETE CASCADE,
  item_index INTEGER NOT NULL,
  im_name TEXT NOT NULL,
  im_url TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
  error_code INTEGER,
  error_message TEXT,
  PRIMARY KEY (trans_id, item_index)
);
CREATE INDEX insert_items_failed ON insert_items (trans_id, state);
