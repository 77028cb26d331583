/**
 * Interactive work first, with a floor for bulk work (contract/wire.ts, PRIORITIES). A request's class travels with
 * its async context to the two places where predictions meet: the engine (one PriorityGate per model set,
 * models/registry.ts; the runtime also reads the class, and ONNX runs bulk work on a thread the OS serves last) and
 * image work (decoding and resizing on libuv's threads, IMAGE_WORK, one job a core). Both gates keep one account of
 * engine time (Shares): while bulk work waits, interactive work may take at most 1 - INFERENCE_BULK_SHARE of it
 * (beyond a credit window), so that inserts keep a floor under any search load; a light search load never reaches
 * its share and keeps strict priority.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { availableParallelism } from 'node:os';
import type { Priority } from '@edge-image-search/contract/wire';

const context = new AsyncLocalStorage<Priority>();

/** The class of the work running now; interactive outside any request. */
export const currentPriority = (): Priority => context.getStore() ?? 'interactive';

/** Runs `job` (and everything it starts) as work of `priority`. */
export const withPriority = <T>(priority: Priority, job: () => T): T => context.run(priority, job);

/** INFERENCE_BULK_SHARE's default (docs/decisions.md, "Searches while a catalog loads"). */
export const DEFAULT_BULK_SHARE = 0.4;

/**
 * How far (ms of interactive time) interactive work may run ahead of its share before it waits for bulk work. A
 * light search load (one a second) never uses its share, so it never waits; a burst after a quiet spell gets this
 * much alone first (bulk holds still), then this much again beside new bulk work, before it is held to its share.
 */
export const CREDIT_MS = 1000;

/** The time the shares are counted in and the wake-up they ask for: the process's own, or a test's fake one. */
export type Clock = { now(): number; wakeAfter(ms: number, wake: () => void): void };

const PROCESS_CLOCK: Clock = { now: () => performance.now(), wakeAfter: (ms, wake) => void setTimeout(wake, ms) };

type Counts = Record<Priority, number>;

/**
 * The account of engine time by class, for every gate of a process. Time goes to whoever owns the machine: to
 * interactive while any interactive job runs (bulk runs in the OS's background, so beside it an interactive job has the
 * cores), to bulk while only bulk jobs run, to nobody while idle. `#lead` is interactive's time beyond what its share
 * allows against bulk's (in ms of interactive time): each bulk ms takes (1 - share) / share off it.
 */
export class Shares {
  readonly #clock: Clock;
  readonly #gates = new Set<PriorityGate>();
  #bulkShare = DEFAULT_BULK_SHARE;
  /** A new process is as after a quiet spell: interactive starts a window behind. */
  #lead = -CREDIT_MS;
  #countedUntil: number;
  /** Predictions under way (serve), and jobs waiting and running at the gates, by class. */
  readonly #underWay: Counts = { interactive: 0, bulk: 0 };
  readonly #waiting: Counts = { interactive: 0, bulk: 0 };
  readonly #running: Counts = { interactive: 0, bulk: 0 };
  #wakeAt = Number.POSITIVE_INFINITY;

  constructor(bulkShare = DEFAULT_BULK_SHARE, clock: Clock = PROCESS_CLOCK) {
    this.#clock = clock;
    this.#countedUntil = clock.now();
    this.setBulkShare(bulkShare);
  }

  /** The share of the service bulk work keeps while it waits, strictly between 0 and 1. */
  setBulkShare(share: number): void {
    if (!(share > 0 && share < 1)) throw new RangeError(`the bulk share must be between 0 and 1, both excluded, got ${share}`);
    this.#count();
    this.#bulkShare = share;
  }

  addGate(gate: PriorityGate): void {
    this.#gates.add(gate);
  }

  /** A prediction of `priority` begins (serve): its class has demand until it ends. */
  begin(priority: Priority): void {
    this.#arrive(priority);
    this.#underWay[priority]++;
  }

  end(priority: Priority): void {
    this.#count();
    this.#underWay[priority]--;
    this.#startWaiting();
  }

  /** A job of `priority` waits at a gate. */
  waits(priority: Priority): void {
    this.#arrive(priority);
    this.#waiting[priority]++;
  }

  starts(priority: Priority): void {
    this.#count();
    this.#waiting[priority]--;
    this.#running[priority]++;
  }

  ends(priority: Priority): void {
    this.#count();
    this.#running[priority]--;
    this.#startWaiting();
  }

  /**
   * Whether a waiting job of `priority` may start now (given a free slot). Interactive: unless bulk work is at the
   * gates and interactive is more than the credit window ahead of its share (then a wake-up is set for when bulk-only
   * time will have made up the difference). Bulk: when no interactive work is under way (serve, or a job at a gate),
   * or when bulk is behind its share; ties go to interactive.
   */
  mayStart(priority: Priority): boolean {
    this.#count();
    if (priority === 'bulk') {
      if (!this.#hasDemand('interactive') || this.#lead > 0) return true;
      // Interactive jobs running bring bulk's turn: look again when they will have.
      if (this.#running.interactive > 0) this.#wakeAfter(-this.#lead);
      return false;
    }
    const over = this.#lead - CREDIT_MS;
    if (over <= 0 || this.#waiting.bulk + this.#running.bulk === 0) return true;
    this.#wakeAfter((over * this.#bulkShare) / (1 - this.#bulkShare));
    return false;
  }

  /** Counts the time since the last count to its owner. */
  #count(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#countedUntil;
    this.#countedUntil = now;
    if (this.#running.interactive > 0) this.#lead += elapsed;
    else if (this.#running.bulk > 0) this.#lead -= (elapsed * (1 - this.#bulkShare)) / this.#bulkShare;
  }

  /**
   * No banking: a class that had no demand comes back with at most a window of credit, whatever the other did
   * meanwhile. Interactive comes back a window behind at most (bulk then holds still for its first window, as under a
   * light search load); bulk comes back with interactive a window ahead at most, so that it has its share at once,
   * and a moment without a bulk job (one insert ending before the next comes) costs it nothing.
   */
  #arrive(priority: Priority): void {
    this.#count();
    if (this.#hasDemand(priority)) return;
    this.#lead = priority === 'interactive' ? Math.max(this.#lead, -CREDIT_MS) : Math.min(this.#lead, CREDIT_MS);
  }

  #hasDemand(priority: Priority): boolean {
    return this.#underWay[priority] + this.#waiting[priority] + this.#running[priority] > 0;
  }

  #wakeAfter(ms: number): void {
    const delay = Math.max(1, Math.ceil(ms));
    const at = this.#clock.now() + delay;
    if (at >= this.#wakeAt) return;
    this.#wakeAt = at;
    this.#clock.wakeAfter(delay, () => {
      this.#wakeAt = Number.POSITIVE_INFINITY;
      this.#startWaiting();
    });
  }

  #startWaiting(): void {
    for (const gate of this.#gates) gate.startWaiting();
  }
}

/** The process's account, shared by every gate unless a test brings its own; INFERENCE_BULK_SHARE sets its share (server.ts). */
export const SHARES = new Shares();

/** Runs a whole prediction as work of `priority`: its class has demand while it is under way. */
export async function serve<T>(priority: Priority, job: () => Promise<T>, shares = SHARES): Promise<T> {
  shares.begin(priority);
  try {
    return await withPriority(priority, job);
  } finally {
    shares.end(priority);
  }
}

type Waiter = { priority: Priority; start: () => void };

/** Runs at most `slots` jobs at once, at most `bulkSlots` of them bulk, interactive first, by the shares above. */
export class PriorityGate {
  readonly #slots: number;
  /** Bulk jobs it runs at once at most. */
  readonly bulkSlots: number;
  readonly #shares: Shares;
  #running = 0;
  #runningBulk = 0;
  #waiting: Waiter[] = [];

  constructor(slots = 1, bulkSlots = slots, shares = SHARES) {
    this.#slots = slots;
    this.bulkSlots = bulkSlots;
    this.#shares = shares;
    shares.addGate(this);
  }

  /** Runs `job` once a slot is free and it is `job`'s turn, as work of `priority` (by default the caller's class). */
  async run<T>(job: () => Promise<T>, priority: Priority = currentPriority()): Promise<T> {
    await new Promise<void>((start) => {
      this.#waiting.push({ priority, start });
      this.#shares.waits(priority);
      this.startWaiting();
    });
    try {
      return await job();
    } finally {
      this.#running--;
      if (priority === 'bulk') this.#runningBulk--;
      this.#shares.ends(priority);
    }
  }

  /** Starts waiters while slots are free: an interactive one first, else a bulk one while a bulk slot is free. */
  startWaiting(): void {
    while (this.#running < this.#slots) {
      const interactive = this.#waiting.findIndex((waiter) => waiter.priority === 'interactive');
      if (interactive >= 0 && this.#shares.mayStart('interactive')) {
        this.#start(interactive);
        continue;
      }
      const bulk = this.#waiting.findIndex((waiter) => waiter.priority === 'bulk');
      if (bulk < 0 || this.#runningBulk >= this.bulkSlots || !this.#shares.mayStart('bulk')) return;
      this.#start(bulk);
    }
  }

  #start(index: number): void {
    const [next] = this.#waiting.splice(index, 1);
    const as = next!.priority;
    this.#running++;
    if (as === 'bulk') this.#runningBulk++;
    this.#shares.starts(as);
    next!.start();
  }
}

/**
 * Decoding and resizing (sharp, on libuv's threads): one job a core, bulk ones on all but one, so that a search's
 * jobs are never queued behind an insert's and one core is always there for them.
 */
export const IMAGE_WORK = new PriorityGate(availableParallelism(), Math.max(1, availableParallelism() - 1));
