-- Where each application's shards live among the indexes of each group (docs/decisions.md, "Placement"): JSON,
-- {"<group's first index>": ["<index of shard 0>", ...]}, written once a group and never changed. NULL: an
-- application made before placement, all of whose shards are in each group's first index.
ALTER TABLE apps ADD COLUMN placement TEXT;
