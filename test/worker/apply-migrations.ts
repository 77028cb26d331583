import { applyD1Migrations, env } from 'cloudflare:test';

const databases = env.D1_DATABASES.split(',').map((name) => (env as unknown as Record<string, D1Database>)[name.trim()]!);
// Every database has every migration (docs/decisions.md, "Placement"): the control tables unused outside DB. Each is
// a database of its own, so side by side.
await Promise.all(databases.map((db) => applyD1Migrations(db, env.TEST_MIGRATIONS)));
// The control database holds a deployment's applications and keys besides catalogs: a quarter of a megabyte more here,
// so that new applications go to DB_2 first (placement by free bytes), and to DB once DB_2's catalogs outgrow it.
await databases[0]!.prepare("INSERT OR IGNORE INTO sweep_cursors (name, value) VALUES ('test-control-bytes', hex(zeroblob(131072)))").run();
