import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startInference } from './inference-process.ts';
import { ROOT, useLocalWrangler } from './wrangler-env.ts';

export type LocalStackOptions = {
  port: number;
  inferencePort: number;
  adminToken: string;
  /** Where wrangler keeps local D1, R2, queue and Durable Object state; default `.wrangler/state` (npm start's). */
  persistTo?: string;
  /** More `--var NAME:value` settings for the Worker. */
  vars?: Record<string, string>;
  /** Called when wrangler exits on its own. */
  onExit?: (code: number | null) => void;
};

export type LocalStack = {
  readonly baseUrl: string;
  readonly inferenceUrl: string;
  /** The bearer secret the inference service requires, for a caller beside the Worker (`npm run bench`). */
  readonly inferenceSecret: string;
  /** The processes: the inference service, then wrangler. */
  readonly children: readonly ChildProcess[];
  stop(): void;
};

const wranglerBin = path.join(ROOT, 'node_modules/.bin/wrangler');
/** wrangler dev runs no cron: the stack calls the Worker's scheduled handler itself, as often as wrangler.toml's cron. */
const SWEEP_EVERY_MS = 10 * 60_000;

/**
 * The whole service on this machine, with no Cloudflare account and no network: applies the D1 migrations, starts
 * the inference service with a fresh shared secret, then `wrangler dev` (local D1, R2, Queues and vector index), and
 * resolves once the Worker answers. Used by `npm start`, `npm run eval` and `npm run bench`.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  useLocalWrangler();
  const persist = options.persistTo ? ['--persist-to', options.persistTo] : [];
  const migrate = spawnSync(wranglerBin, ['d1', 'migrations', 'apply', 'image-search', '--local', ...persist], { stdio: 'inherit', cwd: ROOT });
  if (migrate.status !== 0) throw new Error('applying the D1 migrations failed');

  console.log(`Starting the inference service on 127.0.0.1:${options.inferencePort} (loading models)...`);
  // A fresh shared secret per run: only this Worker can call this inference service.
  const inferenceSecret = randomBytes(16).toString('hex');
  const inference = await startInference(options.inferencePort, { secret: inferenceSecret });
  const inferenceUrl = `http://127.0.0.1:${options.inferencePort}`;

  const vars = { ADMIN_TOKEN: options.adminToken, INFERENCE_URL: inferenceUrl, INFERENCE_SECRET: inferenceSecret, ...options.vars };
  const wrangler = spawn(
    wranglerBin,
    [
      'dev',
      '--ip', '127.0.0.1',
      '--port', String(options.port),
      ...Object.entries(vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
      ...persist,
      '--test-scheduled',
      '--show-interactive-dev-session=false',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'], cwd: ROOT },
  );
  const baseUrl = `http://127.0.0.1:${options.port}`;
  // The sweeper re-sends stalled inserts: local queues live in memory, and a restart of wrangler loses their messages.
  const sweeps = setInterval(() => void fetch(`${baseUrl}/__scheduled?cron=*/10+*+*+*+*`).catch(() => {}), SWEEP_EVERY_MS);
  sweeps.unref();
  const stack: LocalStack = {
    baseUrl,
    inferenceUrl,
    inferenceSecret,
    children: [inference, wrangler],
    stop: () => {
      clearInterval(sweeps);
      for (const child of stack.children) child.kill('SIGTERM');
    },
  };
  wrangler.on('exit', (code) => options.onExit?.(code));
  try {
    await waitFor(`${stack.baseUrl}/`, 120_000);
  } catch (error) {
    stack.stop();
    throw error;
  }
  return stack;
}

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}
