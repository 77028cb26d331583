/** Thrown by ConcurrencyLimit.run when as many jobs already wait as the limit allows, and by ByteBudget. */
export class SaturatedError extends Error {
  constructor(waiting: number) {
    super(`${waiting} jobs are already waiting`);
    this.name = 'SaturatedError';
  }
}

/**
 * Runs at most `max` jobs at once, the others waiting in arrival order, at most `maxWaiting` of them: beyond that a
 * job is refused at once, so an overloaded service says so quickly instead of letting every caller time out. The
 * service bounds the predictions in flight with it, so that memory (decoded images) stays bounded under load while
 * enough requests overlap for the embedder's BatchedSession to batch them.
 */
export class ConcurrencyLimit {
  readonly #max: number;
  readonly #maxWaiting: number;
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(max: number, maxWaiting = Number.POSITIVE_INFINITY) {
    if (!(Number.isInteger(max) && max >= 1)) throw new Error(`the concurrency limit must be a positive integer, got ${max}`);
    this.#max = max;
    this.#maxWaiting = maxWaiting;
  }

  /** Throws SaturatedError when a job started now would be refused. */
  refuseWhenSaturated(): void {
    if (this.#active >= this.#max && this.#waiting.length >= this.#maxWaiting) throw new SaturatedError(this.#waiting.length);
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    this.refuseWhenSaturated();
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

/** Bytes held under a ByteBudget: more may be taken as a body streams in; release gives them all back. */
export type BytesHeld = { take(bytes: number): void; release(): void };

/**
 * Bytes of request bodies the service holds at once, taken before and while a body is read and given back once its
 * prediction is answered: without it, callers past the prediction limit would still each have their body read (up
 * to 50 MB) before being counted. Bytes past the budget are refused at once.
 */
export class ByteBudget {
  readonly #max: number;
  #held = 0;

  constructor(max: number) {
    if (!(Number.isInteger(max) && max >= 1)) throw new Error(`the byte budget must be a positive integer, got ${max}`);
    this.#max = max;
  }

  /**
   * A holding, empty until bytes are taken; a take that would bring the bytes held (everyone's) past `share` of the
   * budget throws SaturatedError. A smaller share is refused first.
   */
  hold(share = 1): BytesHeld {
    let mine = 0;
    return {
      take: (more) => {
        if (this.#held + more > this.#max * share) throw new SaturatedError(this.#held);
        this.#held += more;
        mine += more;
      },
      release: () => {
        this.#held -= mine;
        mine = 0;
      },
    };
  }
}
