-- Issue 21: which embedding model each application's vectors belong to, and re-embedding a catalog into another
-- (src/ingest/reindex.ts). Applications and images of before were all embedded by the first model.
ALTER TABLE apps ADD COLUMN embed_model TEXT NOT NULL DEFAULT 'mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg448-whole+centre70-mirrored-v2';

-- The newest model whose index holds this version's whole-image and object vectors: a reindex re-embeds the others.
ALTER TABLE images ADD COLUMN embed_model TEXT NOT NULL DEFAULT 'mobilenet_v2_1.4_224-nsfwjs4-bottleneck_avg448-whole+centre70-mirrored-v2';
CREATE INDEX images_by_app_model ON images (app_id, embed_model, id);

-- An application's latest reindex. `embedding`: images are re-embedded into to_model while searches use from_model;
-- `retiring`: the application is on to_model, from_model's vectors of it are being deleted (ids above
-- retire_cursor remain); `done`; `failed` (error says why; the application stays on from_model).
CREATE TABLE reindexes (
  app_id TEXT PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
  from_model TEXT NOT NULL,
  to_model TEXT NOT NULL,
  -- The last item number the application had taken when the reindex began: the switch waits for those items.
  from_seq INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('embedding', 'retiring', 'done', 'failed')),
  retire_cursor INTEGER NOT NULL DEFAULT 0,
  -- Each step claims the next number; a message carrying another is of a superseded chain and stops there.
  step INTEGER NOT NULL DEFAULT 0,
  -- Sweeps that found it stalled since it last moved: past a few, it is failed (src/ingest/sweeper.ts).
  resumes INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);
