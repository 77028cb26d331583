import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The one launcher of the inference service, for its own tests, the Worker's tests and the root scripts. The service
 * is spawned by path (devtools reads neither program): `inference/src/server.ts` on the project's Node 22 (the `node`
 * dependency), which runs its TypeScript as it is.
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const SERVER = path.join(ROOT, 'inference/src/server.ts');
const NODE = path.join(ROOT, 'node_modules/.bin/node');

/** Settings added to this process's environment, which the service inherits (INFERENCE_* and the like). */
export type InferenceSettings = Record<string, string>;

/** A service that listens: its process, its URL, and what it printed so far (its stderr is shown here too). */
export type InferenceProcess = {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  /** Its stdout so far. */
  output(): string;
  /** Its stderr so far. */
  errorOutput(): string;
};

/** On loopback unless `settings` say otherwise; the port is the caller's (0: one the service picks). */
function spawnService(settings: InferenceSettings, port: number, stdio: 'inherit' | 'pipe' | number): ChildProcess {
  return spawn(NODE, [SERVER], {
    env: { ...process.env, INFERENCE_HOST: '127.0.0.1', ...settings, INFERENCE_PORT: String(port) },
    stdio: ['ignore', stdio, stdio],
  });
}

/**
 * Spawns the service on a free port and resolves as soon as it listens (its models may still load: `waitUntilReady`).
 * Its output is kept for tests of what it prints.
 */
export async function launchInference(settings: InferenceSettings = {}): Promise<InferenceProcess> {
  const child = spawnService(settings, 0, 'pipe');
  let output = '';
  let errorOutput = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    errorOutput += chunk;
    process.stderr.write(chunk);
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // The port it picked is named by its "listening on" line (inference/src/server.ts).
    child.stdout!.on('data', () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`inference service exited with code ${code} before listening`)));
  });
  return { child, baseUrl, output: () => output, errorOutput: () => errorOutput };
}

/** Resolves once /ready says the models are loaded; fails (and stops the service) if it exits or `timeoutMs` passes first. */
export async function waitUntilReady(service: Pick<InferenceProcess, 'child' | 'baseUrl'>, timeoutMs = 120_000): Promise<void> {
  const { child, baseUrl } = service;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`inference service exited with code ${child.exitCode}`);
    const ready = await fetch(`${baseUrl}/ready`)
      .then((response) => response.ok)
      .catch(() => false);
    if (ready) return;
    await sleep(100);
  }
  child.kill();
  throw new Error(`inference service did not become ready in ${timeoutMs / 1000} s`);
}

/**
 * The service beside a Worker (`npm start`, the benches, the Worker's tests): on `port`, its output shown here, run as
 * inference/Dockerfile runs it; resolves once its models are loaded. `embedModels` is its INFERENCE_EMBED_MODELS, else
 * this process's; `secret` its INFERENCE_SECRET, else none; `output` a file descriptor its output goes to instead.
 */
export async function startInference(port: number, options: { timeoutMs?: number; secret?: string; embedModels?: string; output?: number } = {}): Promise<ChildProcess> {
  const child = spawnService(
    {
      // As in inference/Dockerfile: glibc hands freed image buffers back to the system instead of keeping them.
      MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '131072',
      ...(options.embedModels !== undefined && { INFERENCE_EMBED_MODELS: options.embedModels }),
      INFERENCE_SECRET: options.secret ?? '',
    },
    port,
    options.output ?? 'inherit',
  );
  await waitUntilReady({ child, baseUrl: `http://127.0.0.1:${port}` }, options.timeoutMs);
  return child;
}

/**
 * Runs the service with a setting that must stop it at start: its exit code, everything it printed (`output`, in
 * order) and its stderr alone. Stopped after a minute if it does not stop by itself.
 */
export async function runUntilExit(settings: InferenceSettings): Promise<{ code: number | null; output: string; errorOutput: string }> {
  const child = spawnService(settings, 0, 'pipe');
  let output = '';
  let errorOutput = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    errorOutput += chunk;
  });
  const timer = setTimeout(() => child.kill(), 60_000);
  // 'close', not 'exit': its output is all read by then.
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, output, errorOutput };
}
