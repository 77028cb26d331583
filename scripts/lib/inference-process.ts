import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './wrangler-env.ts';

/**
 * Starts the real inference service (`inference/src/server.ts`) on Node 22 and waits until its models are loaded.
 * `embedModels` is its INFERENCE_EMBED_MODELS, else this process's.
 */
export async function startInference(port: number, options: { timeoutMs?: number; secret?: string; embedModels?: string } = {}): Promise<ChildProcess> {
  const child = spawn(path.join(ROOT, 'node_modules/.bin/node'), [path.join(ROOT, 'inference/src/server.ts')], {
    env: {
      // As in inference/Dockerfile: glibc hands freed image buffers back to the system instead of keeping them.
      MALLOC_MMAP_THRESHOLD_: '131072',
      ...process.env,
      ...(options.embedModels !== undefined && { INFERENCE_EMBED_MODELS: options.embedModels }),
      INFERENCE_PORT: String(port),
      INFERENCE_HOST: '127.0.0.1',
      INFERENCE_SECRET: options.secret ?? '',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`inference service exited with code ${child.exitCode}`);
    const ready = await fetch(`http://127.0.0.1:${port}/ready`)
      .then((response) => response.ok)
      .catch(() => false);
    if (ready) return child;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  child.kill();
  throw new Error('inference service did not become ready in time');
}
