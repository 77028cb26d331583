/**
 * PriorityGate, serve and Shares: interactive jobs first, bulk ones holding still while interactive work is under
 * way, and bulk keeping its share of the service while it waits, however much interactive work comes. The shares are
 * tested on a fake clock, with jobs of known durations: nothing here is timed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Priority } from '@edge-image-search/contract/wire';
import { CREDIT_MS, PriorityGate, serve, Shares, withPriority, type Clock } from '../src/priority.ts';
import { runUntilExit } from './harness.ts';

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
      await sleep(50); // a search busy elsewhere, not at this gate
      searchDone = true;
    });
    const bulk = withPriority('bulk', () => gate.run(async () => void started.push(`bulk 2, search done: ${searchDone}`)));
    await Promise.all([search, bulk]);
    assert.deepEqual(started, ['bulk 1', 'bulk 2, search done: true']);
  });
});

/** A clock that moves only when told, firing its wake-ups in order. */
class FakeClock implements Clock {
  #now = 0;
  #timers: { at: number; order: number; wake: () => void }[] = [];
  #order = 0;

  now(): number {
    return this.#now;
  }

  wakeAfter(ms: number, wake: () => void): void {
    this.#timers.push({ at: this.#now + ms, order: this.#order++, wake });
  }

  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.wakeAfter(ms, resolve));
  }

  /** Moves to `until`, firing each wake-up on the way and letting what it settles run before the next; `after` looks at each step. */
  async runUntil(until: number, after: () => void = () => {}): Promise<void> {
    await settle();
    after();
    for (;;) {
      const next = this.#timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (!next) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = next.at;
      next.wake();
      await settle();
      after();
    }
    this.#now = until;
  }
}

/** Lets every promise settled so far run on. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const both = (): Record<Priority, number> => ({ interactive: 0, bulk: 0 });

/**
 * The service seen from outside, on a fake clock: gates sharing one Shares, clients sending predictions through them,
 * and who owned the machine when, counted apart from Shares by the same rule (any interactive job running: interactive;
 * only bulk: bulk; else idle).
 */
class Service {
  readonly clock = new FakeClock();
  readonly shares: Shares;
  readonly gates: PriorityGate[];
  readonly owned = { ...both(), idle: 0 };
  readonly running = both();
  readonly waiting = both();
  /** Running jobs at each gate. */
  readonly atGate: number[];
  readonly underWay = both();
  /** Each job's class, when it was asked for and when it started. */
  readonly jobs: { priority: Priority; asked: number; started: number }[] = [];
  readonly slots: number;
  #countedUntil = 0;

  constructor(bulkShare: number, gates = 1, slots = 2, bulkSlots = 1) {
    this.shares = new Shares(bulkShare, this.clock);
    this.slots = slots;
    this.gates = Array.from({ length: gates }, () => new PriorityGate(slots, bulkSlots, this.shares));
    this.atGate = this.gates.map(() => 0);
  }

  #count(): void {
    const elapsed = this.clock.now() - this.#countedUntil;
    this.#countedUntil = this.clock.now();
    const owner = this.running.interactive > 0 ? 'interactive' : this.running.bulk > 0 ? 'bulk' : 'idle';
    this.owned[owner] += elapsed;
  }

  /** Counts the time up to now: call before reading `owned`. */
  counted(): { interactive: number; bulk: number; idle: number } {
    this.#count();
    return { ...this.owned };
  }

  /** Runs one job of `ms` at gate `at`; `onStart` looks at the service as it starts. */
  async job(priority: Priority, ms: number, at = 0, onStart: () => void = () => {}): Promise<void> {
    const asked = this.clock.now();
    this.waiting[priority]++;
    await this.gates[at]!.run(async () => {
      this.#count();
      this.waiting[priority]--;
      this.running[priority]++;
      this.atGate[at]!++;
      this.jobs.push({ priority, asked, started: this.clock.now() });
      onStart();
      await this.clock.sleep(ms);
      this.#count();
      this.running[priority]--;
      this.atGate[at]!--;
    }, priority);
  }

  /** One prediction through serve: its jobs one after another, [ms, gate] each. */
  async predict(priority: Priority, steps: readonly (readonly [number, number])[], onStart?: () => void): Promise<void> {
    await serve(
      priority,
      async () => {
        this.underWay[priority]++;
        try {
          for (const [ms, at] of steps) await this.job(priority, ms, at, onStart);
        } finally {
          this.underWay[priority]--;
        }
      },
      this.shares,
    );
  }

  /** `count` clients sending predictions back to back until `until`. */
  clients(count: number, priority: Priority, steps: readonly (readonly [number, number])[], until: number, onStart?: () => void): Promise<void>[] {
    return Array.from({ length: count }, async () => {
      while (this.clock.now() < until) await this.predict(priority, steps, onStart);
    });
  }

  /** Whether an interactive job waits although a gate has a free slot: only the shares hold it. */
  interactiveHeld(): boolean {
    return this.waiting.interactive > 0 && this.atGate.some((running) => running < this.slots);
  }
}

/** A search's steps (decode at the image gate, then the engine) and an insert's, longer. */
const SEARCH = [[10, 1], [40, 0]] as const;
const INSERT = [[15, 1], [60, 0]] as const;

describe('Shares', () => {
  for (const share of [0.25, 0.5]) {
    test(`with both lines full, bulk owns its share of the machine (${share}), at both gates`, async () => {
      const service = new Service(share, 2);
      const end = 300_000;
      const clients = [...service.clients(3, 'interactive', SEARCH, end), ...service.clients(3, 'bulk', INSERT, end)];
      await service.clock.runUntil(end + 1000);
      await Promise.all(clients);
      const { interactive, bulk, idle } = service.counted();
      assert.ok(Math.abs(bulk / (interactive + bulk) - share) < 0.01, `bulk owned ${bulk} ms, interactive ${interactive} ms`);
      assert.ok(idle / (interactive + bulk + idle) < 0.01, `idle ${idle} ms`);
    });
  }

  test('with no bulk work, interactive jobs take every slot, however much they have used', async () => {
    const service = new Service(0.5);
    const end = 100_000;
    const clients = service.clients(4, 'interactive', [[40, 0]], end);
    let held = false;
    await service.clock.runUntil(end + 1000, () => (held ||= service.interactiveHeld()));
    await Promise.all(clients);
    assert.equal(held, false);
    // Two slots, busy the whole time.
    assert.equal(service.jobs.filter((job) => job.started < end).length, (2 * end) / 40);
  });

  test('with interactive work under way, a bulk job starts only while bulk is below its share', async () => {
    const share = 0.25;
    // Three slots, one for bulk, two searchers: the bulk slot is free beside them, the shares alone decide.
    const service = new Service(share, 1, 3, 1);
    const end = 60_000;
    const starts: { interactive: number; bulk: number }[] = [];
    const bulkStarts = () => {
      if (service.waiting.interactive + service.running.interactive + service.underWay.interactive > 0) starts.push(service.counted());
    };
    const clients = [...service.clients(2, 'interactive', [[40, 0]], end), ...service.clients(3, 'bulk', [[60, 0]], end, bulkStarts)];
    await service.clock.runUntil(end + 1000);
    await Promise.all(clients);
    assert.ok(starts.length > 100, `${starts.length} bulk starts`);
    for (const { interactive, bulk } of starts) assert.ok(bulk < share * (interactive + bulk), `a bulk job started with bulk at ${bulk} ms, interactive at ${interactive} ms`);
  });

  test('a held interactive job starts once bulk has had its time, not when a long bulk job ends', async () => {
    // Three slots, one for bulk: the two searchers never wait for a slot, only when the shares hold them.
    const service = new Service(0.5, 1, 3, 1);
    const end = 30_000;
    const clients = [...service.clients(1, 'bulk', [[5000, 0]], end), ...service.clients(2, 'interactive', [[40, 0]], end)];
    await service.clock.runUntil(end + 5000);
    await Promise.all(clients);
    const waits = service.jobs.filter((job) => job.priority === 'interactive').map((job) => job.started - job.asked);
    // Held often, each time until bulk alone has made up what interactive ran beyond its window (at most its two
    // jobs under way), well before the bulk job ends.
    assert.ok(waits.filter((wait) => wait > 0).length > 100);
    assert.ok(Math.max(...waits) <= 2 * 40 + 1, `an interactive job waited ${Math.max(...waits)} ms`);
  });

  test('a light interactive load is never held, nor shares the cores with a bulk start', async () => {
    const service = new Service(0.5, 2);
    const end = 60_000;
    const inserts = service.clients(3, 'bulk', INSERT, end, () => {
      assert.equal(service.underWay.interactive, 0, `a bulk job started during a search at ${service.clock.now()} ms`);
    });
    // One search a second, once the ingest is under way.
    const searches = (async () => {
      await service.clock.sleep(500);
      while (service.clock.now() < end) {
        await Promise.all([service.predict('interactive', SEARCH), service.clock.sleep(1000)]);
      }
    })();
    await service.clock.runUntil(end + 1000);
    await Promise.all([...inserts, searches]);
    const searchJobs = service.jobs.filter((job) => job.priority === 'interactive');
    assert.equal(searchJobs.length, 2 * (end / 1000));
    for (const { asked, started } of searchJobs) assert.equal(started, asked, `a search's job asked at ${asked} ms waited`);
  });

  test('no banking: after bulk alone, a burst of searches goes first for its credit window', async () => {
    // Three slots, one for bulk, two searchers: the bulk slot is free beside them, the shares alone decide.
    const service = new Service(0.5, 1, 3, 1);
    const bulkAlone = 60_000;
    const end = bulkAlone + 20_000;
    let before = service.counted();
    /** The interactive time the burst had used at each bulk start after it came. */
    const bulkStarts: number[] = [];
    const inserts = service.clients(3, 'bulk', [[60, 0]], end, () => {
      if (service.clock.now() > bulkAlone) bulkStarts.push(service.counted().interactive - before.interactive);
    });
    await service.clock.runUntil(bulkAlone);
    before = service.counted();
    const searches = service.clients(2, 'interactive', [[40, 0]], end);
    let heldAfter: number | undefined;
    await service.clock.runUntil(end + 1000, () => {
      if (heldAfter === undefined && service.interactiveHeld()) heldAfter = service.counted().interactive - before.interactive;
    });
    await Promise.all([...inserts, ...searches]);
    // Nothing banked from the minute of bulk alone: bulk holds still for the burst's first window, bulk jobs start
    // beside it for a second, and only then is it held to its share.
    assert.ok(bulkStarts.length > 0 && bulkStarts.every((used) => used > CREDIT_MS), `bulk started after ${bulkStarts[0]} ms of interactive time`);
    assert.ok(heldAfter !== undefined && heldAfter > 2 * CREDIT_MS && heldAfter <= 2 * CREDIT_MS + 40, `held after ${heldAfter} ms of interactive time`);
    const after = service.counted();
    const bulk = after.bulk - before.bulk;
    const interactive = after.interactive - before.interactive;
    assert.ok(Math.abs(bulk / (bulk + interactive) - 0.5) < 0.1, `bulk owned ${bulk} ms against ${interactive} ms`);
  });

  test('no banking: after searches alone, bulk gets its share, no more', async () => {
    const share = 0.5;
    const service = new Service(share);
    const searchesAlone = 60_000;
    const end = searchesAlone + 20_000;
    const searches = service.clients(3, 'interactive', [[40, 0]], end);
    await service.clock.runUntil(searchesAlone);
    const before = service.counted();
    const inserts = service.clients(3, 'bulk', [[60, 0]], end);
    await service.clock.runUntil(end + 1000);
    await Promise.all([...searches, ...inserts]);
    const after = service.counted();
    const bulk = after.bulk - before.bulk;
    const interactive = after.interactive - before.interactive;
    assert.ok(Math.abs(bulk / (bulk + interactive) - share) < 0.01, `bulk owned ${bulk} ms against ${interactive} ms`);
  });

  test('a moment without bulk work costs bulk nothing of its share', async () => {
    // One insert at a time: between two, no bulk work at all.
    const service = new Service(0.5, 1, 3, 1);
    const end = 60_000;
    const clients = [...service.clients(1, 'bulk', [[5000, 0]], end), ...service.clients(2, 'interactive', [[40, 0]], end)];
    // From when the burst of a new process is over.
    await service.clock.runUntil(5000);
    const before = service.counted();
    await service.clock.runUntil(end + 5000);
    await Promise.all(clients);
    const after = service.counted();
    const bulk = after.bulk - before.bulk;
    const interactive = after.interactive - before.interactive;
    assert.ok(Math.abs(bulk / (interactive + bulk) - 0.5) < 0.02, `bulk owned ${bulk} ms against ${interactive} ms`);
  });
});

describe('INFERENCE_BULK_SHARE', () => {
  for (const value of ['0', '1', '1.5', 'half']) {
    test(`INFERENCE_BULK_SHARE=${value} stops the service before it listens`, async () => {
      const { code, output } = await runUntilExit({ INFERENCE_BULK_SHARE: value });
      assert.equal(code, 1);
      assert.doesNotMatch(output, /listening on/);
      assert.match(output, new RegExp(`INFERENCE_BULK_SHARE must be a number between 0 and 1, both excluded, got "${value}"`));
    });
  }
});
