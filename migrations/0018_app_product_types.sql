-- Issue 43: an application's own detectable types (PUT /admin/apps/{app_id}/product-types), as the JSON array of
-- {type, prompts?, attributes_list?} the inference service reads (contract/wire.ts, detectVocabulary); NULL: the
-- service's default types.
ALTER TABLE apps ADD COLUMN product_types TEXT;
