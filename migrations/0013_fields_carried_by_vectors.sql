-- Vectors carry the searchable fields' values as metadata, as the schema was when they were written, so a filter
-- pushed down to the vector index would miss the images written before a field became searchable (or changed type).
-- carried_from: the first version id (images.id) written with the field as it is; the index filters on the field only
-- once every image of the application is at least that new (src/storage/apps.ts). 0: every version, as before.
ALTER TABLE app_fields ADD COLUMN carried_from INTEGER NOT NULL DEFAULT 0;
