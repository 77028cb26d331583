/**
 * Overload: beyond INFERENCE_MAX_WAITING waiting predictions the service answers 503 busy at once, and it still
 * serves once the load is gone.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConcurrencyLimit, SaturatedError } from '../src/concurrency-limit.ts';
import { IMAGES_DIR, startServer, type RunningServer } from './harness.ts';

describe('ConcurrencyLimit', () => {
  test('refuses a job only when every slot is busy and the waiting line is full', async () => {
    const limit = new ConcurrencyLimit(1, 1);
    let release = (): void => {};
    const running = limit.run(() => new Promise<void>((resolve) => (release = resolve)));
    assert.equal(limit.saturated, false);
    const waiting = limit.run(async () => 'second');
    assert.equal(limit.saturated, true);
    await assert.rejects(limit.run(async () => 'third'), SaturatedError);
    release();
    await running;
    assert.equal(await waiting, 'second');
    assert.equal(limit.saturated, false);
    assert.equal(await limit.run(async () => 'fourth'), 'fourth');
  });
});

describe('INFERENCE_MAX_WAITING', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_MAX_BATCH: '1', INFERENCE_MAX_WAITING: '1' });
  });
  after(() => server.stop());

  test('answers 503 busy beyond the waiting limit, then serves again', async () => {
    const bytes = await readFile(path.join(IMAGES_DIR, 'opencv-doc_plant.jpg'));
    const answers = await Promise.all(Array.from({ length: 8 }, () => server.predict(bytes, 'embed,detect,colors')));
    const statuses = answers.map(({ status }) => status);
    assert.ok(statuses.includes(503), `expected some 503 among ${statuses.join(',')}`);
    assert.ok(statuses.filter((status) => status === 200).length >= 2, `expected the admitted ones to succeed: ${statuses.join(',')}`);
    for (const { status, body } of answers) {
      if (status === 503) assert.equal(body.error.code, 'busy');
      else assert.equal(status, 200);
    }
    assert.equal((await server.predict(bytes)).status, 200);
  });
});
