-- What the inference service found in a query image (src/search/query-analysis.ts), as JSON: later searches by its
-- im_id work on the same objects instead of detecting again. NULL for images kept before it was stored.
ALTER TABLE query_images ADD COLUMN analysis TEXT;
