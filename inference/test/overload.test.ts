/**
 * Overload: beyond INFERENCE_MAX_WAITING waiting predictions the service answers 503 busy at once, and it still
 * serves once the load is gone.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConcurrencyLimit, SaturatedError } from '../src/concurrency-limit.ts';
import { IMAGES_DIR, runUntilExit, startServer, type RunningServer } from './harness.ts';

describe('ConcurrencyLimit', () => {
  test('refuses a job only when every slot is busy and the waiting line is full', async () => {
    const limit = new ConcurrencyLimit(1, 1);
    let release = (): void => {};
    const running = limit.run(() => new Promise<void>((resolve) => (release = resolve)));
    assert.doesNotThrow(() => limit.refuseWhenSaturated());
    const waiting = limit.run(async () => 'second');
    assert.throws(() => limit.refuseWhenSaturated(), SaturatedError);
    await assert.rejects(limit.run(async () => 'third'), SaturatedError);
    release();
    await running;
    assert.equal(await waiting, 'second');
    assert.doesNotThrow(() => limit.refuseWhenSaturated());
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

describe('interactive and bulk predictions', () => {
  let server: RunningServer;
  let bytes: Uint8Array;
  before(async () => {
    server = await startServer({ INFERENCE_MAX_BATCH: '8', INFERENCE_MAX_BULK: '2', INFERENCE_MAX_BULK_WAITING: '8' });
    bytes = await readFile(path.join(IMAGES_DIR, 'opencv-doc_plant.jpg'));
  });
  after(() => server.stop());

  test('an interactive prediction overtakes the bulk ones waiting before it', async () => {
    const finished: string[] = [];
    const send = async (name: string, priority: string) => {
      const { status } = await server.predict(bytes, 'embed,detect,colors', {}, priority);
      assert.equal(status, 200, name);
      finished.push(name);
    };
    const bulk = Array.from({ length: 8 }, (_, i) => send(`bulk ${i}`, 'bulk'));
    // Sent once the bulk ones are in: two run, six wait.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await Promise.all([...bulk, send('search', 'interactive')]);
    const position = finished.indexOf('search');
    assert.ok(position <= 3, `the search finished after ${position} bulk predictions: ${finished.join(', ')}`);
  });

  test('bulk is refused busy when its line is full, while searches are still served', async () => {
    const answers = await Promise.all([
      ...Array.from({ length: 14 }, () => server.predict(bytes, 'embed', {}, 'bulk')),
      ...Array.from({ length: 4 }, () => server.predict(bytes, 'embed', {}, 'interactive')),
    ]);
    const bulk = answers.slice(0, 14).map(({ status }) => status);
    assert.ok(bulk.includes(503), `expected some bulk 503 among ${bulk.join(',')}`);
    for (const { status, body } of answers.slice(0, 14)) if (status === 503) assert.equal(body.error.code, 'busy');
    assert.deepEqual(answers.slice(14).map(({ status }) => status), [200, 200, 200, 200]);
  });

  test('an unknown class: 400 bad_priority', async () => {
    const { status, body } = await server.predict(bytes, 'embed', {}, 'urgent');
    assert.equal(status, 400);
    assert.equal(body.error.code, 'bad_priority');
  });
});

describe('INFERENCE_MAX_BODY_MB', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ INFERENCE_MAX_BODY_MB: '50' });
  });
  after(() => server.stop());

  test('counts bodies before it reads them: past the budget a request is answered busy at once', async () => {
    // Three 30 MB bodies at once hold 90 MB: at most one fits 50 MB; the others are refused from their length.
    const big = new Uint8Array(30 * 1024 * 1024);
    const send = async (): Promise<number> => {
      const form = new FormData();
      form.set('tasks', 'embed');
      form.set('image', new Blob([big]), 'big');
      const response = await fetch(`${server.baseUrl}/predict`, { method: 'POST', body: form });
      await response.arrayBuffer();
      return response.status;
    };
    const statuses = await Promise.all([send(), send(), send()]);
    assert.ok(statuses.filter((status) => status === 503).length >= 2, `expected two 503 among ${statuses.join(',')}`);
    // What was held is given back: a normal prediction goes through.
    const bytes = await readFile(path.join(IMAGES_DIR, 'opencv-doc_plant.jpg'));
    assert.equal((await server.predict(bytes)).status, 200);
  });

  test('refuses a budget smaller than one body', async () => {
    const { code, output } = await runUntilExit({ INFERENCE_MAX_BODY_MB: '10' });
    assert.notEqual(code, 0);
    assert.match(output, /INFERENCE_MAX_BODY_MB must be an integer of at least 50/);
  });
});
