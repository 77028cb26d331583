import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { startFixtureServer } from './fixture-server.ts';
import { freePort } from './free-port.ts';
import { startInference } from '../../scripts/lib/inference-process.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    inferenceUrl: string;
    inferenceSecret: string;
    fixturesUrl: string;
    /** Set by the fault tests' setup only. */
    inferenceTimeoutMs?: string;
  }
}

/** Runs in Node before the Workers tests: the real inference service and a server for the test images. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [inferencePort, fixturesPort] = [await freePort(), await freePort()];
  const inferenceSecret = randomBytes(16).toString('hex');
  const [inference, fixtures] = await Promise.all([startInference(inferencePort, { secret: inferenceSecret }), startFixtureServer(fixturesPort)]);
  project.provide('inferenceSecret', inferenceSecret);
  project.provide('inferenceUrl', `http://127.0.0.1:${inferencePort}`);
  project.provide('fixturesUrl', `http://127.0.0.1:${fixturesPort}`);
  return async () => {
    inference.kill();
    fixtures.closeAllConnections();
    await new Promise((resolve) => fixtures.close(resolve));
  };
}
