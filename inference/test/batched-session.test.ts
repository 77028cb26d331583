/** BatchedSession: concurrent single runs share engine runs, each caller gets its own row, failures stay in their batch. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BatchedSession } from '../src/runtime/batched-session.ts';
import type { Float32Tensor, InferenceSession } from '../src/runtime/runtime.ts';

/** A session whose output "sum" is each row's sum and "twice" each row doubled; it can be told to fail. */
class RowSumSession implements InferenceSession {
  readonly shapes: number[][] = [];
  failNext = false;

  async run(input: Float32Tensor): Promise<Map<string, Float32Tensor>> {
    this.shapes.push([...input.shape]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failNext) {
      this.failNext = false;
      throw new Error('engine failed');
    }
    const rows = input.shape[0]!;
    const rowLength = input.data.length / rows;
    const sums = Float32Array.from({ length: rows }, (_, row) => input.data.subarray(row * rowLength, (row + 1) * rowLength).reduce((a, b) => a + b, 0));
    return new Map([
      ['sum', { data: sums, shape: [rows, 1] }],
      ['twice', { data: input.data.map((value) => value * 2), shape: [...input.shape] }],
    ]);
  }
}

const single = (...values: number[]): Float32Tensor => ({ data: Float32Array.from(values), shape: [1, values.length] });

describe('BatchedSession', () => {
  test('a lone call runs at once, as a batch of one', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8);
    const outputs = await session.run(single(1, 2, 3), ['sum', 'twice']);
    assert.deepEqual([...outputs.get('sum')!.data], [6]);
    assert.deepEqual(outputs.get('twice')!.shape, [1, 3]);
    assert.deepEqual(engine.shapes, [[1, 3]]);
  });

  test('calls arriving while a batch runs go together, each answered with its own row', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => session.run(single(i, i, i), ['sum', 'twice'])));
    assert.deepEqual(session.batchSizes, [1, 5]);
    assert.deepEqual(engine.shapes, [[1, 3], [5, 3]]);
    results.forEach((outputs, i) => {
      assert.deepEqual([...outputs.get('sum')!.data], [3 * i]);
      assert.deepEqual([...outputs.get('twice')!.data], [2 * i, 2 * i, 2 * i]);
      assert.deepEqual(outputs.get('twice')!.shape, [1, 3]);
    });
  });

  test('keeps to the batch cap and batches only calls of one shape', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 4);
    await Promise.all([
      ...Array.from({ length: 10 }, () => session.run(single(1, 1), ['sum'])),
      session.run(single(1, 1, 1), ['sum']),
    ]);
    assert.deepEqual(session.batchSizes, [1, 4, 4, 1, 1]);
    assert.deepEqual(engine.shapes.map((shape) => shape[0]), [1, 4, 4, 1, 1]);
    assert.ok(engine.shapes.some((shape) => shape[1] === 3));
  });

  test('a failed run rejects its own batch only', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8);
    const first = session.run(single(1), ['sum']);
    engine.failNext = true;
    const [a, b, c] = [first, session.run(single(2), ['sum']), session.run(single(3), ['sum'])].map((promise) => promise.then(
      (outputs) => outputs.get('sum')!.data[0],
      (error: Error) => error.message,
    ));
    // The first call was already running when failNext was set, so it is the one that fails.
    assert.deepEqual(await Promise.all([a, b, c]), ['engine failed', 2, 3]);
  });

  test('refuses a batched input and a bad cap', () => {
    const session = new BatchedSession(new RowSumSession(), 2);
    assert.throws(() => session.run({ data: new Float32Array(4), shape: [2, 2] }, ['sum']), /one input at a time/);
    assert.throws(() => new BatchedSession(new RowSumSession(), 0), /positive integer/);
  });
});
