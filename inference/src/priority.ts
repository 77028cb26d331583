/**
 * Interactive work first (contract.ts, PRIORITIES): a request's class travels with its async context down to the
 * engine, where one PriorityGate lets a single run go at a time, interactive runs before waiting bulk ones. An
 * engine run executes on the JavaScript thread (onnxruntime-node and tfjs-wasm alike), so one at a time costs no
 * throughput; it only decides who goes next, and an interactive step waits for at most the bulk step running.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Priority } from './contract.ts';

const context = new AsyncLocalStorage<Priority>();

/** Runs `job` (and everything it starts) as work of `priority`. */
export const withPriority = <T>(priority: Priority, job: () => T): T => context.run(priority, job);

/** The class of the work running now; interactive outside any request. */
export const currentPriority = (): Priority => context.getStore() ?? 'interactive';

/** One job at a time; the next is the first waiting interactive job, else the first waiting one. */
export class PriorityGate {
  #busy = false;
  #waiting: { priority: () => Priority; start: () => void }[] = [];

  /**
   * Runs `job` once the gate is free and no interactive job waits ahead of it. `priority` is asked again at each
   * hand-over: a waiter that batches calls (BatchedSession) becomes interactive when an interactive call joins it.
   */
  async run<T>(job: () => Promise<T>, priority: () => Priority): Promise<T> {
    if (this.#busy) await new Promise<void>((start) => this.#waiting.push({ priority, start }));
    else this.#busy = true;
    try {
      return await job();
    } finally {
      // Handed straight to the next waiter, so that nothing arriving meanwhile slips in ahead of it.
      const index = Math.max(0, this.#waiting.findIndex((waiter) => waiter.priority() === 'interactive'));
      const [next] = this.#waiting.splice(index, 1);
      if (next) next.start();
      else this.#busy = false;
    }
  }
}
