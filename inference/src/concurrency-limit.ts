/**
 * Runs at most `max` jobs at once, the others waiting in arrival order. The
 * service bounds the predictions in flight with it, so that memory (decoded
 * images) stays bounded under load while enough requests overlap for the
 * embedder's BatchedSession to batch them.
 */
export class ConcurrencyLimit {
  readonly #max: number;
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(max: number) {
    if (!(Number.isInteger(max) && max >= 1)) throw new Error(`the concurrency limit must be a positive integer, got ${max}`);
    this.#max = max;
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#max) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#active++;
    try {
      return await job();
    } finally {
      this.#active--;
      this.#waiting.shift()?.();
    }
  }
}
