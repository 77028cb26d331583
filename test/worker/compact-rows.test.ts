/**
 * Rows that stay small (issue 45, migrations/0023): an image row written before keeps what it said once its model is
 * a number, its palette a short string and its times integers, and the Worker's reads find it as before.
 */
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { findImageByName } from '../../src/storage/images';
import { imagesInModel, imagesToReembed } from '../../src/storage/reindexes';

const OLD_MODEL = 'an-embedding-model-id-of-before/with-a-long-name-v2';
const OTHER_MODEL = 'another-model';

describe('migrations/0023', () => {
  it('converts an image row of before: its model to its number, its palette and times compact', async () => {
    const migration = env.TEST_MIGRATIONS.find(({ name }) => name.startsWith('0023_'))!;
    // The images table as migrations 0001 to 0022 left it, with a row as the Worker wrote it then.
    await env.DB.batch([
      env.DB.prepare('DROP TABLE images'),
      env.DB.prepare('DROP TABLE embed_models'),
      env.DB.prepare(
        `CREATE TABLE images (
           id INTEGER PRIMARY KEY AUTOINCREMENT, app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE, im_name TEXT NOT NULL,
           im_url TEXT NOT NULL, blob_key TEXT NOT NULL, format TEXT NOT NULL, width INTEGER NOT NULL, height INTEGER NOT NULL,
           metadata TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, updated_at TEXT NOT NULL, object_count INTEGER NOT NULL DEFAULT 0,
           colors TEXT NOT NULL DEFAULT '[]', embed_model TEXT NOT NULL, UNIQUE (app_id, im_name))`,
      ),
      env.DB.prepare('CREATE INDEX images_by_app_model ON images (app_id, embed_model, id)'),
      env.DB.prepare('CREATE INDEX images_by_app_id ON images (app_id, id)'),
      env.DB.prepare(
        `INSERT INTO apps (id, name, access_key, secret_key_hash, app_key_hash, embed_model, created_at)
         VALUES ('app_migrated', 'migrated', 'ak-migrated', 'h1', 'h2', ?, '2026-01-31T11:00:00.000+0000')`,
      ).bind(OLD_MODEL),
      env.DB.prepare(
        `INSERT INTO images (id, app_id, im_name, im_url, blob_key, format, width, height, metadata, created_at, updated_at, object_count, colors, embed_model)
         VALUES (7, 'app_migrated', 'shoe', 'https://example.com/shoe.jpg', 'app_migrated/images/shoe/7', 'jpeg', 640, 480, '{"brand":"acme"}',
           '2026-01-31T12:00:00.123+0000', '2026-02-01T08:30:15.250+0000', 2, ?, ?)`,
      ).bind(JSON.stringify([{ hex: '84786d', ratio: 0.3289 }, { hex: 'E9E0D9', ratio: 1 }, { hex: '000000', ratio: 0 }]), OLD_MODEL),
    ]);
    await env.DB.batch(migration.queries.map((query) => env.DB.prepare(query)));

    const row = await env.DB.prepare('SELECT i.*, m.name AS model_name FROM images i JOIN embed_models m ON m.id = i.model WHERE i.id = 7').first();
    expect(row).toMatchObject({
      app_id: 'app_migrated',
      im_name: 'shoe',
      blob_key: 'app_migrated/images/shoe/7',
      metadata: '{"brand":"acme"}',
      object_count: 2,
      // 0.3289 * 255 = 83.9: 0x54.
      colors: '84786d54e9e0d9ff00000000',
      model_name: OLD_MODEL,
      created_at: Date.parse('2026-01-31T12:00:00.123Z'),
      updated_at: Date.parse('2026-02-01T08:30:15.250Z'),
    });
    expect(await findImageByName(env.DB, 'app_migrated', 'shoe', 'all')).toMatchObject({ id: 7, metadata: { brand: 'acme' }, object_count: 2 });
    expect(await imagesInModel(env.DB, 'app_migrated', OLD_MODEL)).toEqual({ total: 1, inModel: 1 });
    // A model with no number yet has no image in it: a reindex into it finds every image to embed again.
    expect(await imagesInModel(env.DB, 'app_migrated', OTHER_MODEL)).toEqual({ total: 1, inModel: 0 });
    expect((await imagesToReembed(env.DB, 'app_migrated', OTHER_MODEL, 10)).map(({ id }) => id)).toEqual([7]);
    expect(await imagesToReembed(env.DB, 'app_migrated', OLD_MODEL, 10)).toEqual([]);
  });
});
