/**
 * Interactive work first (contract/wire.ts, PRIORITIES). A request's class travels with its async context to the two
 * places where predictions meet: the engine (one PriorityGate per model set, models/registry.ts; the runtime also
 * reads the class, and ONNX runs bulk work on a thread the OS serves last) and image work (decoding and resizing on libuv's threads, IMAGE_WORK, one job a
 * core). At both, a waiting interactive job goes first; and while an interactive prediction is under way (serve),
 * bulk jobs hold still, so that a search shares the cores with at most the bulk jobs already running, not with the
 * queue of every insert in flight. So that a steady stream of searches cannot starve inserts, each gate lets one
 * bulk job go every BULK_PAUSE_MS all the same.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { availableParallelism } from 'node:os';
import type { Priority } from '@edge-image-search/contract/wire';

const context = new AsyncLocalStorage<Priority>();

/** The class of the work running now; interactive outside any request. */
export const currentPriority = (): Priority => context.getStore() ?? 'interactive';

/** Runs `job` (and everything it starts) as work of `priority`. */
export const withPriority = <T>(priority: Priority, job: () => T): T => context.run(priority, job);

/** While interactive work is under way, each gate lets one bulk job go at most this often. */
export const BULK_PAUSE_MS = 300;

let interactiveUnderWay = 0;
const gates = new Set<PriorityGate>();

/** Runs a whole prediction as work of `priority`: while interactive ones are under way, bulk jobs hold still. */
export async function serve<T>(priority: Priority, job: () => Promise<T>): Promise<T> {
  if (priority === 'bulk') return withPriority(priority, job);
  interactiveUnderWay++;
  try {
    return await withPriority(priority, job);
  } finally {
    interactiveUnderWay--;
    for (const gate of gates) gate.startWaiting();
  }
}

type Waiter = { priority: Priority; start: () => void };

/** Runs at most `slots` jobs at once, at most `bulkSlots` of them bulk, by the rules above. */
export class PriorityGate {
  readonly #slots: number;
  readonly #bulkSlots: number;
  #running = 0;
  #runningBulk = 0;
  #waiting: Waiter[] = [];
  #lastBulkStart = Number.NEGATIVE_INFINITY;
  #pauseOver: ReturnType<typeof setTimeout> | undefined;

  constructor(slots = 1, bulkSlots = slots) {
    this.#slots = slots;
    this.#bulkSlots = bulkSlots;
    gates.add(this);
  }

  /** Runs `job` once a slot is free and it is `job`'s turn, as work of `priority` (by default the caller's class). */
  async run<T>(job: () => Promise<T>, priority: Priority = currentPriority()): Promise<T> {
    await new Promise<void>((start) => {
      this.#waiting.push({ priority, start });
      this.startWaiting();
    });
    try {
      return await job();
    } finally {
      this.#running--;
      if (priority === 'bulk') this.#runningBulk--;
      this.startWaiting();
    }
  }

  /**
   * Starts waiters while slots are free: interactive ones first, bulk ones while a bulk slot is free and no
   * interactive work is under way.
   */
  startWaiting(): void {
    while (this.#running < this.#slots && this.#waiting.length > 0) {
      const interactive = this.#waiting.findIndex((waiter) => waiter.priority === 'interactive');
      if (interactive >= 0) {
        this.#start(interactive);
        continue;
      }
      if (this.#runningBulk >= this.#bulkSlots) return;
      const sinceBulk = performance.now() - this.#lastBulkStart;
      if (interactiveUnderWay > 0 && sinceBulk < BULK_PAUSE_MS) {
        // Only bulk waits, behind interactive work: look again when the pause is over.
        this.#pauseOver ??= setTimeout(() => {
          this.#pauseOver = undefined;
          this.startWaiting();
        }, BULK_PAUSE_MS - sinceBulk);
        return;
      }
      this.#lastBulkStart = performance.now();
      this.#start(0);
    }
  }

  #start(index: number): void {
    const [next] = this.#waiting.splice(index, 1);
    const as = next!.priority;
    this.#running++;
    if (as === 'bulk') this.#runningBulk++;
    next!.start();
  }
}

/**
 * Decoding and resizing (sharp, on libuv's threads): one job a core, bulk ones on all but one, so that a search's
 * jobs are never queued behind an insert's and one core is always there for them.
 */
export const IMAGE_WORK = new PriorityGate(availableParallelism(), Math.max(1, availableParallelism() - 1));
