import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/** `npm run check:deploy`: every deploy environment bundles cleanly (`wrangler deploy --dry-run`), no account needed. */
useLocalWrangler();
for (const environment of ['production', 'cn']) {
  const outdir = path.join(ROOT, '.wrangler/dry-run', environment);
  const run = spawnSync(path.join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--env', environment, '--outdir', outdir], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (run.status !== 0) {
    console.error(`wrangler deploy --dry-run --env ${environment} failed`);
    process.exit(1);
  }
}
