import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { isDeadLetterQueue, isUpdateQueue } from '../src/ingest/queue-names.ts';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/**
 * `npm run check:deploy`: every environment declares the queues the Worker tells apart by name, every deploy
 * environment bundles cleanly (`wrangler deploy --dry-run`) and its Vectorize setup is valid
 * (`setup-vectorize.ts --dry-run`), no account needed.
 */
useLocalWrangler();
const fail = (what: string): never => {
  console.error(what);
  process.exit(1);
};
const check = (what: string, command: string, args: string[]): void => {
  const run = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) fail(`${what} failed`);
};

/**
 * The ingest queue (INSERT_QUEUE) and the metadata-only updates' queue (UPDATE_QUEUE) of an environment: each
 * consumed by the Worker with a dead-letter queue named `<queue>-dlq`, itself consumed, and each named so that the
 * queue handler (src/index.ts, by src/ingest/queue-names.ts) hands its batches to the right consumer.
 */
function checkQueues(environment: string | undefined): void {
  const where = environment === undefined ? 'the top level' : `env.${environment}`;
  const queues = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env: environment }).queues as {
    producers?: { binding: string; queue: string }[];
    consumers?: { queue: string; dead_letter_queue?: string }[];
  };
  const producer = (binding: string): string =>
    queues.producers?.find((each) => each.binding === binding)?.queue ?? fail(`wrangler.toml, ${where}: no ${binding} producer`);
  const queue = { INSERT_QUEUE: producer('INSERT_QUEUE'), UPDATE_QUEUE: producer('UPDATE_QUEUE') };
  if (isDeadLetterQueue(queue.INSERT_QUEUE) || isUpdateQueue(queue.INSERT_QUEUE)) fail(`wrangler.toml, ${where}: INSERT_QUEUE's name "${queue.INSERT_QUEUE}" reads as another queue's`);
  if (!isUpdateQueue(queue.UPDATE_QUEUE)) fail(`wrangler.toml, ${where}: UPDATE_QUEUE's name "${queue.UPDATE_QUEUE}" does not read as the update queue's (src/ingest/queue-names.ts)`);
  for (const name of Object.values(queue)) {
    const consumer = queues.consumers?.find((each) => each.queue === name);
    if (consumer?.dead_letter_queue !== `${name}-dlq`) fail(`wrangler.toml, ${where}: "${name}" needs a consumer with dead_letter_queue "${name}-dlq"`);
    if (!queues.consumers?.some((each) => each.queue === `${name}-dlq`)) fail(`wrangler.toml, ${where}: "${name}-dlq" needs a consumer`);
  }
}

for (const environment of [undefined, 'production', 'cn']) checkQueues(environment);
for (const environment of ['production', 'cn']) {
  const outdir = path.join(ROOT, '.wrangler/dry-run', environment);
  check(`wrangler deploy --dry-run --env ${environment}`, path.join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--env', environment, '--outdir', outdir]);
  check(`setup-vectorize --env ${environment} --dry-run`, process.execPath, [path.join(ROOT, 'scripts/setup-vectorize.ts'), '--env', environment, '--dry-run']);
}
