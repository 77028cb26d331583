-- Issue 42: a remove fails the pending insert items of its names (111) in its own batch, and an item's version or
-- metadata is applied only while the item is pending (src/storage/transactions.ts, itemPending), so a remove no
-- longer needs its sequence recorded for the inserts it overtook.
DROP TABLE removals;
