-- How many times the sweeper re-sent an item's queue message because its transaction stopped making progress
-- (src/ingest/sweeper.ts), and an index that finds pending items without scanning settled ones.
ALTER TABLE insert_items ADD COLUMN sweeps INTEGER NOT NULL DEFAULT 0;
CREATE INDEX insert_items_pending ON insert_items (trans_id) WHERE state = 'pending';
