/**
 * The inference HTTP service (routes in app.ts):
 *
 *   INFERENCE_PORT=8788 INFERENCE_HOST=127.0.0.1 node inference/src/server.ts
 *
 * INFERENCE_RUNTIME picks the engine (onnx, the default, or tfjs-wasm); the
 * model set comes from INFERENCE_EMBED_MODELS, INFERENCE_DETECTOR, DETECTOR_LABELS
 * and INFERENCE_MAX_BATCH (models/registry.ts); INFERENCE_MAX_WAITING bounds the
 * predictions waiting for a slot (default 64), beyond which /predict answers
 * 503 busy at once; INFERENCE_BULK_SHARE (default 0.4) is the share of the
 * service bulk work keeps while it waits (priority.ts); INFERENCE_BULK_PROCESS
 * (auto, the default, or off) runs bulk predictions in a process of their own
 * under SCHED_IDLE (bulk-process.ts), which the service starts with
 * INFERENCE_ROLE=bulk (service, the default, otherwise). The port is bound at once and
 * models load behind it: /health answers as soon as the process listens,
 * /ready only once the models are loaded and warmed. Port 0 picks a free
 * port; the "listening on" line on stdout names it.
 */
import { serve } from '@hono/node-server';
import { createApp, MAX_BODY_BYTES } from './app.ts';
import { ByteBudget, ConcurrencyLimit } from './concurrency-limit.ts';
import { fetchModelFiles, loadModels, modelSetFromEnv, type ModelRegistry } from './models/registry.ts';
import { DEFAULT_BULK_SHARE, SHARES } from './priority.ts';
import { createRuntime, runsOnCpuAlone, runtimeNameFromEnv } from './runtime/select.ts';
import { BulkProcess, roleFromEnv, wantsBulkProcess } from './bulk-process.ts';
import { fractionSetting, integerSetting } from './settings.ts';

/** Reads the environment, binds the port at once and loads the models behind it; every setting is checked first. */
async function start(env: NodeJS.ProcessEnv): Promise<void> {
  const port = Number(env.INFERENCE_PORT ?? 8788);
  const host = env.INFERENCE_HOST ?? '127.0.0.1';
  const secret = env.INFERENCE_SECRET || undefined;
  // Without a secret anyone who reaches the port may run the models: only a service bound to loopback may go without.
  if (!secret && !['127.0.0.1', '::1', 'localhost'].includes(host)) {
    throw new Error(`INFERENCE_SECRET must be set when the service listens on ${host}: only a loopback host may run without it`);
  }
  const runtimeName = runtimeNameFromEnv(env);
  const modelSet = modelSetFromEnv(env);
  const maxWaiting = integerSetting(env, 'INFERENCE_MAX_WAITING', 64, 0);
  const maxBulk = integerSetting(env, 'INFERENCE_MAX_BULK', Math.ceil(modelSet.maxBatch / 2), 1);
  const maxBulkWaiting = integerSetting(env, 'INFERENCE_MAX_BULK_WAITING', 16, 0);
  const maxBodyMegabytes = integerSetting(env, 'INFERENCE_MAX_BODY_MB', 128, MAX_BODY_BYTES / (1024 * 1024));
  // What inserts keep of the service while they wait, however many searches come (priority.ts).
  SHARES.setBulkShare(fractionSetting(env, 'INFERENCE_BULK_SHARE', DEFAULT_BULK_SHARE));
  const role = roleFromEnv(env);
  const separateBulk = wantsBulkProcess(env, role, runsOnCpuAlone(runtimeName, env));
  // Downloads (hf: models, the first time) happen here: a model that cannot be had stops the service before it listens.
  await fetchModelFiles(modelSet);
  if (role === 'bulk') {
    // Started by a service (bulk-process.ts), which holds its stdin: once that closes, the service is gone.
    process.stdin.on('end', () => process.exit(0)).resume();
  }
  // Started once the models are here, so that it finds them in the cache.
  const bulkProcess = separateBulk
    ? new BulkProcess(env, (ending) => {
        console.error(`inference: the bulk process ended (${ending}); stopping`);
        process.exit(1);
      })
    : undefined;

  let models: ModelRegistry | undefined;
  const app = createApp({
    models: () => models,
    secret,
    inFlight: {
      // As many searches in flight as one embedder batch holds: enough to fill batches, few enough to bound memory.
      interactive: new ConcurrencyLimit(modelSet.maxBatch, maxWaiting),
      // Inserts: enough to keep the engine busy while others decode, few enough that their decodes leave the
      // cores to searches; a short line, so that a flood of them is refused busy before searches are.
      bulk: new ConcurrencyLimit(maxBulk, maxBulkWaiting),
    },
    // Bodies held at once, counted before they are read: the memory of requests still reading or waiting is bounded.
    bodies: new ByteBudget(maxBodyMegabytes * 1024 * 1024),
    bulkProcess,
  });
  serve({ fetch: app.fetch, port, hostname: host }, (address) => {
    console.log(`inference: listening on http://${host}:${address.port}`);
  });
  try {
    const runtime = await createRuntime(runtimeName, bulkProcess ? 'interactive' : role === 'bulk' ? 'bulk' : 'both');
    const started = performance.now();
    const registry = await loadModels(runtime, modelSet);
    const loaded = [...registry.embed.ids.map((id) => `embed=${id}`), `detect=${registry.detect.modelId}`, `colors=${registry.colors.modelId}`].join(', ');
    console.log(`inference: runtime ${runtimeName}, ${runtime.description}; loaded ${loaded} in ${Math.round(performance.now() - started)} ms`);
    // Ready once bulk work has somewhere to go too.
    if (bulkProcess) {
      await bulkProcess.ready();
      console.log(`inference: bulk predictions in a process of their own under SCHED_IDLE (pid ${bulkProcess.pid})`);
    }
    models = registry;
  } catch (error) {
    console.error('inference: model loading failed', error);
    process.exit(1);
  }
}

await start(process.env);
