import { keepWorkerEventsIn, testLogOf } from './test/support/test-log.ts';
import base from './vitest.config.ts';

/**
 * `npm run test:faults`: the Worker against an inference service that goes down, hangs, answers garbage or is busy
 * (test/support/inference-faults.ts). One file at a time, since the faults are shared by everything running.
 */
export default {
  ...base,
  test: {
    ...base.test,
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['./test/support/faults-setup.ts'],
    fileParallelism: false,
    onConsoleLog: keepWorkerEventsIn(testLogOf('faults')),
  },
};
