-- Per-minute usage is counted by a Durable Object per application (src/storage/usage-counter.ts), not in D1.
DROP TABLE usage_windows;
