import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/**
 * The Worker's bindings and variables as wrangler.toml declares them, typed by `wrangler types` into
 * worker-configuration.d.ts (the `WranglerEnv` that src/env.ts completes with the secrets). Run it after changing
 * wrangler.toml; `--check` (`npm run check:env-types`) fails while the file is stale instead of writing it.
 */
useLocalWrangler();
const check = process.argv.includes('--check');
const args = ['types', 'worker-configuration.d.ts', '--env-interface=WranglerEnv', '--include-runtime=false', '--strict-vars=false'];
const run = spawnSync(path.join(ROOT, 'node_modules/.bin/wrangler'), [...args, ...(check ? ['--check'] : [])], { cwd: ROOT, stdio: 'inherit' });
if (check && run.status !== 0) console.error('worker-configuration.d.ts is stale: regenerate it with `node scripts/env-types.ts`.');
process.exit(run.status ?? 1);
