/**
 * Runs jobs one at a time in arrival order. tfjs-wasm executes on the main
 * thread without re-entrancy, and onnxruntime-node's run() blocks the main
 * thread as well, so inference is serialised here rather than interleaved
 * across awaits.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(job);
    // A failed job must not block the ones queued behind it.
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
