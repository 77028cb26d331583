/**
 * Bulk predictions in a process of their own under SCHED_IDLE (src/bulk-process.ts): started with the service on a
 * Linux CPU host, every thread of it in the background, serving the bulk requests alone and answering as the service
 * does, errors included; gone with the service, and the service gone with it; off when asked.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { imageBytes, runUntilExit, startServer, type RunningServer } from './harness.ts';
import { processStat, SCHED_IDLE, threadStats } from './proc-threads.ts';

const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

/** The scheduling policy of each of a process's threads. */
const threadPolicies = (pid: number): number[] => [...threadStats(pid).values()].map(({ policy }) => policy);

/** CPU time (clock ticks, user and system, every thread) a process has used so far. */
const cpuTicks = (pid: number): number => processStat(pid).ticks;

describe('the bulk process (INFERENCE_BULK_PROCESS=auto, the default)', () => {
  let server: RunningServer;
  let bulkPid: number;
  let bytes: Buffer;

  before(async () => {
    [server, bytes] = await Promise.all([startServer(), imageBytes('skimage_chelsea.jpg')]);
    const children = childrenOf(server.pid);
    assert.equal(children.length, 1, `the service's child processes: ${children.join(', ')}`);
    bulkPid = children[0]!;
  });

  after(() => server?.stop());

  test('runs every one of its threads under SCHED_IDLE, and the service says so', () => {
    const policies = threadPolicies(bulkPid);
    assert.ok(policies.length > 4 && policies.every((policy) => policy === SCHED_IDLE), `policies: ${policies.join(', ')}`);
    assert.ok(threadPolicies(server.pid).every((policy) => policy !== SCHED_IDLE), 'the service itself runs at the normal policy');
    assert.match(server.output(), new RegExp(`bulk predictions in a process of their own under SCHED_IDLE \\(pid ${bulkPid}\\)`));
    assert.match(server.output(), /inference \(bulk process\): runtime onnx, .*no interactive thread; bulk: 2 lanes/);
    assert.match(server.output(), /^inference: runtime onnx, .*2 intra-op threads; no bulk lane/m);
  });

  test('serves the bulk predictions, and only them, answering as the service does', async () => {
    const tasks = 'embed,detect,colors';
    const expected = await server.predict(bytes, tasks);
    assert.equal(expected.status, 200);
    let ticks = cpuTicks(bulkPid);
    for (let i = 0; i < 3; i++) assert.equal((await server.predict(bytes, tasks)).status, 200);
    const byInteractive = cpuTicks(bulkPid) - ticks;
    ticks = cpuTicks(bulkPid);
    for (let i = 0; i < 3; i++) {
      const { status, body } = await server.predict(bytes, tasks, {}, 'bulk');
      assert.equal(status, 200, JSON.stringify(body.error));
      assert.deepEqual(body.detect, expected.body.detect);
      assert.deepEqual(body.colors, expected.body.colors);
      const worst = body.embed.vector.reduce((max, value, k) => Math.max(max, Math.abs(value - expected.body.embed.vector[k]!)), 0);
      assert.ok(worst < 1e-4, `the bulk embedding differs by up to ${worst}`);
    }
    const byBulk = cpuTicks(bulkPid) - ticks;
    assert.ok(byInteractive <= 2, `three searches took ${byInteractive} ticks in the bulk process`);
    assert.ok(byBulk >= 10, `three bulk predictions took only ${byBulk} ticks in the bulk process`);
  });

  test("answers a bad bulk request with the service's own error", async () => {
    const form = new FormData();
    form.set('tasks', 'embed');
    const [asBulk, asSearch] = await Promise.all([server.post(form, { 'x-inference-priority': 'bulk' }), server.post(form)]);
    assert.equal(asBulk.status, 400);
    assert.deepEqual(asBulk.body, asSearch.body);
    assert.equal(asBulk.body.error.code, 'missing_image');
  });
});

describe('the bulk process ends', () => {
  test('with the service, however the service ends', async () => {
    const server = await startServer();
    const [bulkPid] = childrenOf(server.pid);
    assert.ok(bulkPid, 'a bulk process');
    server.child.kill('SIGKILL');
    for (let i = 0; i < 50 && existsSync(`/proc/${bulkPid}`); i++) await sleep(100);
    assert.ok(!existsSync(`/proc/${bulkPid}`), 'the bulk process outlived the service by 5 s');
  });
});

describe('the service', () => {
  test('stops when its bulk process ends, saying so: bulk work would have nowhere to go', async () => {
    const server = await startServer();
    const [bulkPid] = childrenOf(server.pid);
    assert.ok(bulkPid, 'a bulk process');
    const exited = once(server.child, 'exit');
    process.kill(bulkPid, 'SIGKILL');
    const [code] = (await Promise.race([exited, sleep(10_000).then(() => ['still running'])])) as [number | string | null];
    if (code === 'still running') server.stop();
    assert.equal(code, 1);
    assert.match(server.errorOutput(), /inference: the bulk process ended \(signal SIGKILL\); stopping/);
  });
});

describe('INFERENCE_BULK_PROCESS=off', () => {
  test('keeps bulk work in the service, on its bulk lanes', async () => {
    const server = await startServer({ INFERENCE_BULK_PROCESS: 'off' });
    try {
      assert.deepEqual(childrenOf(server.pid), []);
      assert.match(server.output(), /2 intra-op threads; bulk: 2 lanes of 1 thread, SCHED_IDLE/);
      const { status } = await server.predict(await imageBytes('skimage_chelsea.jpg'), 'embed', {}, 'bulk');
      assert.equal(status, 200);
    } finally {
      server.stop();
    }
  });

  test('any other value stops the service, naming the choices', async () => {
    const { code, output } = await runUntilExit({ INFERENCE_BULK_PROCESS: 'always' });
    assert.equal(code, 1);
    assert.doesNotMatch(output, /listening on/);
    assert.match(output, /INFERENCE_BULK_PROCESS must be one of auto, off, got "always"/);
  });
});
