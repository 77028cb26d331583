import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defineConfig } from 'vitest/config';
import { useLocalWrangler } from './scripts/lib/wrangler-env.ts';

useLocalWrangler();

/**
 * `npm run test:unit`: the Worker's pure tests (the filter language, the vector index and its adapters), in workerd
 * with wrangler.toml's bindings but without the Worker tests' set-up (no inference service, no image server, no D1
 * migrations), so that they answer in seconds and run first.
 */
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: './wrangler.toml' }, remoteBindings: false })],
  test: {
    include: ['test/unit/**/*.test.ts'],
  },
});
