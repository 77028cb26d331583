-- What an insert item does: 'image' downloads im_url and indexes the image; 'metadata' (an /insert without im_url
-- for an image already in the collection) changes only its metadata, with no download or inference; its im_url is ''.
ALTER TABLE insert_items ADD COLUMN kind TEXT NOT NULL DEFAULT 'image' CHECK (kind IN ('image', 'metadata'));
