import type { Priority } from '@edge-image-search/contract/wire';
import { currentPriority, PriorityGate, withPriority } from '../priority.ts';
import type { Float32Tensor, InferenceSession } from './runtime.ts';

/**
 * Schedules and batches the single-image runs of one session. Runs go through the service's one PriorityGate, so
 * that interactive work goes first. Each class waits at the gate apart: calls of one class queue while a batch of
 * theirs waits or runs (for bulk, as many batches as the gate has bulk slots: one a bulk lane of the runtime), and go
 * as one batch of up to that class's cap when the gate lets them. Classes never mix in a batch, so an interactive row
 * never waits for bulk rows to run; nor does it wait for a bulk batch of the same session under way, when the gate
 * has a slot for it (the runtime runs each class apart: onnxruntime.ts). A lone call runs at once, so batching adds
 * no waiting; under load, the engine sees fewer, larger runs (on a GPU, nearly
 * free rows). With a cap above 1 the session must take a batch of any size along the first dimension and answer one
 * row per input in its outputs' first dimension; calls must agree on the input's shape and the output names.
 */
export class BatchedSession implements InferenceSession {
  readonly #session: InferenceSession;
  readonly #maxBatch: Readonly<Record<Priority, number>>;
  readonly #gate: PriorityGate;
  readonly #queues: Record<Priority, Pending[]> = { interactive: [], bulk: [] };
  /** A class's jobs at the gate, waiting or running, and how many it may have there. */
  readonly #scheduled: Record<Priority, number> = { interactive: 0, bulk: 0 };
  readonly #maxScheduled: Readonly<Record<Priority, number>>;
  /** Sizes of the batches run so far, for measurements and tests. */
  readonly batchSizes: number[] = [];

  constructor(session: InferenceSession, maxBatch: number, gate = new PriorityGate(), maxBulkBatch = maxBatch) {
    for (const cap of [maxBatch, maxBulkBatch]) {
      if (!(Number.isInteger(cap) && cap >= 1)) throw new Error(`maxBatch must be a positive integer, got ${cap}`);
    }
    this.#session = session;
    this.#maxBatch = { interactive: maxBatch, bulk: maxBulkBatch };
    this.#maxScheduled = { interactive: 1, bulk: gate.bulkSlots };
    this.#gate = gate;
  }

  run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    if (input.shape[0] !== 1) throw new Error(`BatchedSession takes one input at a time, got a batch of ${input.shape[0]}`);
    const priority = currentPriority();
    return new Promise((resolve, reject) => {
      this.#queues[priority].push({ input, outputNames, resolve, reject });
      if (this.#scheduled[priority] < this.#maxScheduled[priority]) {
        this.#scheduled[priority]++;
        this.#schedule(priority);
      }
    });
  }

  /**
   * Waits for the gate, runs the class's next batch and, with calls left, waits again: that wait is taken while the
   * gate is still held, so that the gate picks the next job among every waiter, this queue's left calls included. A
   * job whose calls another job of its class took meanwhile ends without a run.
   */
  #schedule(priority: Priority): void {
    void this.#gate.run(async () => {
      if (this.#queues[priority].length > 0) await this.#runNextBatch(priority);
      if (this.#queues[priority].length > 0) this.#schedule(priority);
      else this.#scheduled[priority]--;
    }, priority);
  }

  async #runNextBatch(priority: Priority): Promise<void> {
    const queue = this.#queues[priority];
    const first = queue[0]!;
    // Only calls of one shape and outputs share a run; any other waits for the next batch.
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    for (const pending of queue) (batch.length < this.#maxBatch[priority] && sameCall(pending, first) ? batch : rest).push(pending);
    this.#queues[priority] = rest;
    this.batchSizes.push(batch.length);
    try {
      // As work of the batch's class, whoever's call started the queue: the runtime runs each class apart.
      const outputs = await withPriority(priority, () => this.#session.run(stack(batch.map((pending) => pending.input)), first.outputNames));
      batch.forEach((pending, row) => pending.resolve(rowOf(outputs, row, batch.length)));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
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
