import { availableParallelism } from 'node:os';
import path from 'node:path';
import { cloudflareTest, readD1Migrations } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';
import { unstable_readConfig } from 'wrangler';
import { useLocalWrangler } from './scripts/lib/wrangler-env.ts';
import { keepWorkerEventsIn, testLogOf } from './test/support/test-log.ts';

useLocalWrangler();

const migrations = await readD1Migrations(path.join(import.meta.dirname, 'migrations'));
const localEmbedModels = String(unstable_readConfig({ config: path.join(import.meta.dirname, 'wrangler.toml') }).vars.EMBED_MODELS);

type TextModel = { id: string; dimensions: number };

/** wrangler.toml's models and, after them, the setup's text-reading one (global-setup.ts), with indexes of its own. */
const withTextModel = (model: TextModel | undefined): Record<string, string> =>
  model
    ? {
        EMBED_MODELS: JSON.stringify({ ...JSON.parse(localEmbedModels), [model.id]: { dimensions: model.dimensions, images: 'images-text', objects: 'objects-text', tuned: { images: 'images-text-tuned', objects: 'objects-text-tuned' } } }),
        TEXT_EMBED_MODEL: model.id,
      }
    : {};

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      // The top level of wrangler.toml is the local configuration: no account-only binding in it.
      wrangler: { configPath: './wrangler.toml' },
      remoteBindings: false,
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: migrations,
          ADMIN_TOKEN: 'test-admin-token',
          // Short enough for a test to watch a download time out.
          IMAGE_DOWNLOAD_TIMEOUT_MS: '5000',
          // Short enough for test/worker/app-cache.test.ts to watch another isolate's change arrive.
          APP_CACHE_TTL_MS: '1500',
          INFERENCE_URL: inject<string>('inferenceUrl'),
          INFERENCE_SECRET: inject<string>('inferenceSecret'),
          FIXTURES_URL: inject<string>('fixturesUrl'),
          // The fault tests make inference hang: they wait seconds, not wrangler.toml's half minute.
          ...(inject('inferenceTimeoutMs') ? { INFERENCE_TIMEOUT_MS: inject<string>('inferenceTimeoutMs') } : {}),
          ...withTextModel(inject<TextModel | undefined>('textEmbedModel')),
        },
      },
    })),
  ],
  test: {
    include: ['test/worker/**/*.test.ts'],
    globalSetup: ['./test/support/global-setup.ts'],
    setupFiles: ['./test/worker/apply-migrations.ts'],
    testTimeout: 120_000,
    // Two files at a time even on two cores: a Worker test mostly waits for queue batches and polls, not for CPU
    // (the suite took 600 s one file at a time, 371-393 s two at a time, here).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The Worker logs one line per request (src/http/middleware.ts) and per failed insert: thousands in a run, kept
    // in the suite's log (test/support/test-log.ts).
    onConsoleLog: keepWorkerEventsIn(testLogOf('worker')),
    hookTimeout: 180_000,
  },
});
