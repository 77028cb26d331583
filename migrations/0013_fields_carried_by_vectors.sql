-- Vectors carry the values of the fields that are searchable and not text (src/storage/vectors.ts) as the schema was
-- when they were written, so a filter the vector index applied on a field made searchable later would miss the
-- images written before. carried_from: NULL for a field vectors do not carry; otherwise the first version id
-- (images.id) written since the field became carried: the index filters on it only once every image of the
-- application is at least that new (src/storage/apps.ts). 0: every version.
ALTER TABLE app_fields ADD COLUMN carried_from INTEGER DEFAULT 0;
UPDATE app_fields SET carried_from = NULL WHERE searchable = 0 OR type = 'text';
-- The oldest image of an application, looked up while a field is not carried by every vector.
CREATE INDEX images_by_app_id ON images (app_id, id);
