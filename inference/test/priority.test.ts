/** PriorityGate and serve: interactive jobs first, bulk ones holding still while interactive work is under way. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BULK_PAUSE_MS, PriorityGate, serve, withPriority } from '../src/priority.ts';

/** A job that takes `ms` and notes its name when it starts. */
const job = (started: string[], name: string, ms = 5) => async () => {
  started.push(name);
  await sleep(ms);
};

describe('PriorityGate', () => {
  test('runs at most its slots at once, and a waiting interactive job before waiting bulk ones', async () => {
    const gate = new PriorityGate(1);
    const started: string[] = [];
    await Promise.all([
      withPriority('bulk', () => gate.run(job(started, 'bulk 1'))),
      withPriority('bulk', () => gate.run(job(started, 'bulk 2'))),
      withPriority('interactive', () => gate.run(job(started, 'search'))),
    ]);
    assert.deepEqual(started, ['bulk 1', 'search', 'bulk 2']);
  });

  test('keeps slots beyond its bulk slots for interactive jobs', async () => {
    const gate = new PriorityGate(2, 1);
    const started: string[] = [];
    const bulk = [1, 2, 3].map((i) => withPriority('bulk', () => gate.run(job(started, `bulk ${i}`, 30))));
    await sleep(5);
    // One bulk job runs, two wait for the one bulk slot: the search starts at once in the other slot.
    await withPriority('interactive', () => gate.run(job(started, 'search')));
    assert.deepEqual(started, ['bulk 1', 'search']);
    await Promise.all(bulk);
    assert.deepEqual(started, ['bulk 1', 'search', 'bulk 2', 'bulk 3']);
  });

  test('holds bulk jobs still while interactive work is under way, then lets them go', async () => {
    const gate = new PriorityGate(1);
    const started: string[] = [];
    let searchDone = false;
    await withPriority('bulk', () => gate.run(async () => void started.push('bulk 1')));
    const search = serve('interactive', async () => {
      await sleep(50); // a search busy elsewhere, not at this gate, for less than BULK_PAUSE_MS
      searchDone = true;
    });
    const bulk = withPriority('bulk', () => gate.run(async () => void started.push(`bulk 2, search done: ${searchDone}`)));
    await Promise.all([search, bulk]);
    assert.deepEqual(started, ['bulk 1', 'bulk 2, search done: true']);
  });

  test(`lets one bulk job go every ${BULK_PAUSE_MS} ms under endless interactive work`, async () => {
    const gate = new PriorityGate(1);
    const started: number[] = [];
    const since = performance.now();
    let searching = true;
    const searches = serve('interactive', async () => {
      while (searching) await sleep(20);
    });
    const bulk = [1, 2, 3].map(() => withPriority('bulk', () => gate.run(async () => void started.push(performance.now() - since))));
    await Promise.race([Promise.all(bulk), sleep(2.5 * BULK_PAUSE_MS)]);
    searching = false;
    await Promise.all([searches, ...bulk]);
    // The first goes at once (no bulk job went before), the second a pause later; the third waits for the next pause.
    assert.ok(started.length === 3);
    assert.ok(started[1]! >= BULK_PAUSE_MS - 20 && started[1]! < 1.5 * BULK_PAUSE_MS, `second at ${started[1]} ms`);
    assert.ok(started[2]! >= 2 * BULK_PAUSE_MS - 20, `third at ${started[2]} ms`);
  });
});
