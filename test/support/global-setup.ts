import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { textForm, textPredictionSchema } from '@edge-image-search/contract/wire';
import { writeClip } from '../../inference/test/tiny-models.ts';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { startInference } from '@edge-image-search/devtools/inference-service';
import { keepSuiteNoiseIn, testLogOf } from './test-log.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    inferenceUrl: string;
    inferenceSecret: string;
    fixturesUrl: string;
    /** Set by the fault tests' setup only. */
    inferenceTimeoutMs?: string;
    /** The service's text-reading model (a tiny CLIP, text-search.test.ts): its id and its vectors' length. */
    textEmbedModel?: { id: string; dimensions: number };
  }
}

/**
 * Runs in Node before the Workers tests: the real inference service and a server for the test images. The service
 * loads the built-in embedders (the default first, as the tests expect) and a tiny CLIP folder written here, whose
 * text tower maps `red` to the red image's vector (inference/test/tiny-models.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const sayNoise = keepSuiteNoiseIn(testLogOf('worker'));
  const [inferencePort, fixturesPort] = [await freePort(), await freePort()];
  const inferenceSecret = randomBytes(16).toString('hex');
  const models = mkdtempSync(path.join(tmpdir(), 'worker-test-models-'));
  const clip = writeClip(path.join(models, 'tiny-clip'));
  // The service's default set (EMBEDDER_NAMES: importing it here would load its networks' code), then the folder.
  const embedModels = `mobilenet-v2,fused,${clip}`;
  const [inference, fixtures] = await Promise.all([
    startInference(inferencePort, { secret: inferenceSecret, embedModels }),
    startFixtureServer(fixturesPort),
  ]);
  const inferenceUrl = `http://127.0.0.1:${inferencePort}`;
  project.provide('inferenceSecret', inferenceSecret);
  project.provide('inferenceUrl', inferenceUrl);
  project.provide('fixturesUrl', `http://127.0.0.1:${fixturesPort}`);
  project.provide('textEmbedModel', await textModel(inferenceUrl, inferenceSecret));
  return async () => {
    inference.kill();
    fixtures.closeAllConnections();
    await new Promise((resolve) => fixtures.close(resolve));
    rmSync(models, { recursive: true, force: true });
    sayNoise();
  };
}

/** The folder's model as the service reports it (the last of /health's embed_models), and the length it embeds to. */
async function textModel(inferenceUrl: string, secret: string): Promise<{ id: string; dimensions: number }> {
  const health = (await (await fetch(`${inferenceUrl}/health`)).json()) as { embed_models: string[] };
  const id = health.embed_models.at(-1)!;
  const response = await fetch(`${inferenceUrl}/predict`, { method: 'POST', body: textForm('red', { embedModel: id }), headers: { authorization: `Bearer ${secret}` } });
  return { id, dimensions: textPredictionSchema.parse(await response.json()).embed.dim };
}
