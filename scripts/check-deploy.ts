import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/**
 * `npm run check:deploy`: every deploy environment bundles cleanly (`wrangler deploy --dry-run`) and its Vectorize
 * setup is valid (`setup-vectorize.ts --dry-run`), no account needed.
 */
useLocalWrangler();
const check = (what: string, command: string, args: string[]): void => {
  const run = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`${what} failed`);
    process.exit(1);
  }
};
for (const environment of ['production', 'cn']) {
  const outdir = path.join(ROOT, '.wrangler/dry-run', environment);
  check(`wrangler deploy --dry-run --env ${environment}`, path.join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--env', environment, '--outdir', outdir]);
  check(`setup-vectorize --env ${environment} --dry-run`, process.execPath, [path.join(ROOT, 'scripts/setup-vectorize.ts'), '--env', environment, '--dry-run']);
}
