import { applyD1Migrations, env } from 'cloudflare:test';

// Every database has every migration (docs/decisions.md, "Placement"): the control tables unused outside DB.
for (const binding of env.D1_DATABASES.split(',').map((name) => name.trim())) {
  await applyD1Migrations((env as unknown as Record<string, D1Database>)[binding]!, env.TEST_MIGRATIONS);
}
