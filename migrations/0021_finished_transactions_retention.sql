-- Issue 45 (rows that stay small): finished insert transactions and their items are deleted once their status has
-- been kept INSERT_STATUS_RETENTION_HOURS (src/storage/transactions.ts), oldest first.
CREATE INDEX insert_transactions_by_update ON insert_transactions (update_time);
