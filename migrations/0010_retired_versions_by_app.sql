-- The consumer deletes an application's retired versions oldest first after each batch (storage/retired.ts).
CREATE INDEX retired_versions_by_app ON retired_versions (app_id, retired_at);
