import type { Float32Tensor, InferenceSession } from './runtime.ts';

/**
 * Batches concurrent single-image runs of one session into one run with a batch dimension: while a batch runs, new
 * calls queue; when it ends, everything queued (up to `maxBatch`) goes as the next batch. A lone call runs at once,
 * so batching adds no waiting; under load, the engine sees fewer, larger runs (on a GPU, nearly free rows).
 * The session must take a batch of any size along the first dimension and answer one row per input in its
 * outputs' first dimension; calls must agree on the input's shape and the output names.
 */
export class BatchedSession implements InferenceSession {
  readonly #session: InferenceSession;
  readonly #maxBatch: number;
  #queue: Pending[] = [];
  #running = false;
  /** Sizes of the batches run so far, for measurements and tests. */
  readonly batchSizes: number[] = [];

  constructor(session: InferenceSession, maxBatch: number) {
    if (!(Number.isInteger(maxBatch) && maxBatch >= 1)) throw new Error(`maxBatch must be a positive integer, got ${maxBatch}`);
    this.#session = session;
    this.#maxBatch = maxBatch;
  }

  run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    if (input.shape[0] !== 1) throw new Error(`BatchedSession takes one input at a time, got a batch of ${input.shape[0]}`);
    return new Promise((resolve, reject) => {
      this.#queue.push({ input, outputNames, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    while (this.#queue.length > 0) {
      const first = this.#queue[0]!;
      // Only calls of the same shape and outputs share a run; any other waits for the next batch.
      const batch: Pending[] = [];
      const rest: Pending[] = [];
      for (const pending of this.#queue) {
        (batch.length < this.#maxBatch && sameCall(pending, first) ? batch : rest).push(pending);
      }
      this.#queue = rest;
      this.batchSizes.push(batch.length);
      try {
        const outputs = await this.#session.run(stack(batch.map((pending) => pending.input)), first.outputNames);
        batch.forEach((pending, row) => pending.resolve(rowOf(outputs, row, batch.length)));
      } catch (error) {
        for (const pending of batch) pending.reject(error);
      }
    }
    this.#running = false;
  }
}

type Pending = {
  input: Float32Tensor;
  outputNames: readonly string[];
  resolve: (outputs: Map<string, Float32Tensor>) => void;
  reject: (error: unknown) => void;
};

const sameCall = (a: Pending, b: Pending): boolean =>
  a.input.shape.length === b.input.shape.length &&
  a.input.shape.every((size, axis) => size === b.input.shape[axis]) &&
  a.outputNames.length === b.outputNames.length &&
  a.outputNames.every((name, index) => name === b.outputNames[index]);

/** Inputs of shape [1, ...] stacked into [n, ...]. */
function stack(inputs: readonly Float32Tensor[]): Float32Tensor {
  if (inputs.length === 1) return inputs[0]!;
  const rowLength = inputs[0]!.data.length;
  const data = new Float32Array(rowLength * inputs.length);
  inputs.forEach((input, row) => data.set(input.data, row * rowLength));
  return { data, shape: [inputs.length, ...inputs[0]!.shape.slice(1)] };
}

/** Row `row` of every output of a batch of `size`, as a batch of one. */
function rowOf(outputs: Map<string, Float32Tensor>, row: number, size: number): Map<string, Float32Tensor> {
  const rows = new Map<string, Float32Tensor>();
  for (const [name, output] of outputs) {
    if (output.shape[0] !== size) throw new Error(`output ${name} has ${output.shape[0]} rows for a batch of ${size}`);
    const rowLength = output.data.length / size;
    rows.set(name, { data: output.data.slice(row * rowLength, (row + 1) * rowLength), shape: [1, ...output.shape.slice(1)] });
  }
  return rows;
}
