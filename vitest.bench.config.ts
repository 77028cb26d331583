import base from './vitest.config.ts';

/**
 * `npm run bench`'s search latency run (`test/bench/`): the Worker tests' setup (workerd with miniflare's D1, R2 and
 * the local vector index, the real inference service) on files that `vitest run` never picks up.
 */
export default {
  ...base,
  test: {
    ...base.test,
    include: ['test/bench/**/*.bench-run.ts'],
    globalSetup: [...[base.test?.globalSetup ?? []].flat(), './test/support/bench-results.ts'],
    testTimeout: 1_200_000,
  },
};
