-- Issue 44: an application's search tuned on a label field of its own (src/ingest/tuning.ts, docs/decisions.md
-- "Tuning on a label field"). `apps.tuning` is the version of the projection its searches use (NULL: untuned); the
-- projection itself is in R2 (tunings/<app_id>/<version>/projection), its vectors in its model's tuned indexes.
ALTER TABLE apps ADD COLUMN tuning INTEGER;

-- An application's latest tuning. `fitting`: the labelled images' stored vectors are read into the fit's statistics
-- (R2) past `cursor`; `projecting`: every image's stored vectors are projected into the tuned indexes past `cursor`;
-- `evaluating`: held-out labelled images are searched before and after, past `cursor`; `done` (applied or not);
-- `retiring`: untuned (or not applied, or cancelled), its tuned vectors are being deleted past `cursor`; `failed`.
CREATE TABLE tunings (
  app_id TEXT PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  label_field TEXT NOT NULL,
  -- 'better': applied only when held-out precision@5 is not worse than untuned; 'always'.
  apply TEXT NOT NULL CHECK (apply IN ('better', 'always')),
  state TEXT NOT NULL CHECK (state IN ('fitting', 'projecting', 'evaluating', 'retiring', 'done', 'failed')),
  -- The labels fitted (a JSON array, the most frequent with at least 3 labelled images), chosen when it began.
  classes TEXT NOT NULL,
  labelled INTEGER NOT NULL,
  cursor INTEGER NOT NULL DEFAULT 0,
  -- The last item number pending when a phase began: inserts that may have read the targets of before it.
  phase_seq INTEGER NOT NULL DEFAULT 0,
  -- A phase that must not begin before this time (ISO): isolates' cached copies of the application expire first.
  not_before TEXT,
  fitted INTEGER NOT NULL DEFAULT 0,
  queries INTEGER NOT NULL DEFAULT 0,
  hits_before INTEGER NOT NULL DEFAULT 0,
  hits_after INTEGER NOT NULL DEFAULT 0,
  applied INTEGER,
  -- Why it failed: kept through the retire pass that follows a failure, which then ends `failed`.
  failure TEXT,
  step INTEGER NOT NULL DEFAULT 0,
  resumes INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);
