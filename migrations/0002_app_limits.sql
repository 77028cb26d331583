-- Per-application limits set through the admin API; NULL means no limit.
-- image_limit: images in the collection ("Exceeds image collection size limit.").
-- pending_limit: images accepted but not yet processed, beyond which /insert answers "System busy".
ALTER TABLE apps ADD COLUMN image_limit INTEGER;
ALTER TABLE apps ADD COLUMN pending_limit INTEGER;
