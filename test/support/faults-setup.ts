import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { FAULTS_INFERENCE_TIMEOUT_MS, startFaultyInference } from './inference-faults.ts';
import { keepSuiteNoiseIn, testLogOf } from './test-log.ts';

/** The fault tests' setup: as global-setup.ts, with the Worker's inference reached through the fault proxy. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const sayNoise = keepSuiteNoiseIn(testLogOf('faults'));
  const [proxyPort, inferencePort, fixturesPort] = [await freePort(), await freePort(), await freePort()];
  const secret = randomBytes(16).toString('hex');
  const [inference, fixtures] = await Promise.all([
    startFaultyInference({ proxyPort, inferencePort, secret }),
    startFixtureServer(fixturesPort),
  ]);
  project.provide('inferenceSecret', secret);
  project.provide('inferenceUrl', `http://127.0.0.1:${proxyPort}`);
  project.provide('fixturesUrl', `http://127.0.0.1:${fixturesPort}`);
  project.provide('inferenceTimeoutMs', String(FAULTS_INFERENCE_TIMEOUT_MS));
  return async () => {
    await inference.close();
    fixtures.closeAllConnections();
    await new Promise((resolve) => fixtures.close(resolve));
    sayNoise();
  };
}
