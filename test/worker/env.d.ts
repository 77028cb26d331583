import type { D1Migration } from '@cloudflare/vitest-plugin';
import type { Env as WorkerEnv } from '../../src/env';

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      FIXTURES_URL: string;
      /** The text-reading model of EMBED_MODELS (test/support/global-setup.ts). */
      TEXT_EMBED_MODEL: string;
    }
  }
}
