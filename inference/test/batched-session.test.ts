/**
 * BatchedSession: concurrent single runs share engine runs, each caller gets its own row, failures stay in their
 * batch; through a shared PriorityGate, interactive runs go before waiting bulk ones.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { currentPriority, PriorityGate, withPriority } from '../src/priority.ts';
import { BatchedSession } from '../src/runtime/batched-session.ts';
import type { Float32Tensor, InferenceSession } from '../src/runtime/runtime.ts';

/** A session whose output "sum" is each row's sum and "twice" each row doubled; it can be told to fail. */
class RowSumSession implements InferenceSession {
  readonly shapes: number[][] = [];
  /** The first value of each run's rows, in the order the runs started. */
  readonly firstValues: number[][] = [];
  failNext = false;

  async run(input: Float32Tensor): Promise<Map<string, Float32Tensor>> {
    this.shapes.push([...input.shape]);
    const rowLength = input.data.length / input.shape[0]!;
    this.firstValues.push(Array.from({ length: input.shape[0]! }, (_, row) => input.data[row * rowLength]!));
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failNext) {
      this.failNext = false;
      throw new Error('engine failed');
    }
    const rows = input.shape[0]!;
    const sums = Float32Array.from({ length: rows }, (_, row) => input.data.subarray(row * rowLength, (row + 1) * rowLength).reduce((a, b) => a + b, 0));
    return new Map([
      ['sum', { data: sums, shape: [rows, 1] }],
      ['twice', { data: input.data.map((value) => value * 2), shape: [...input.shape] }],
    ]);
  }
}

const single = (...values: number[]): Float32Tensor => ({ data: Float32Array.from(values), shape: [1, values.length] });

/** Lets a call just made start running: calls made in one tick of the event loop go as one batch. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

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
    const first = session.run(single(0, 0, 0), ['sum', 'twice']);
    await tick();
    const results = await Promise.all([first, ...Array.from({ length: 5 }, (_, i) => session.run(single(i + 1, i + 1, i + 1), ['sum', 'twice']))]);
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
    const first = session.run(single(1, 1), ['sum']);
    await tick();
    await Promise.all([first, ...Array.from({ length: 9 }, () => session.run(single(1, 1), ['sum'])), session.run(single(1, 1, 1), ['sum'])]);
    assert.deepEqual(session.batchSizes, [1, 4, 4, 1, 1]);
    assert.deepEqual(engine.shapes.map((shape) => shape[0]), [1, 4, 4, 1, 1]);
    assert.ok(engine.shapes.some((shape) => shape[1] === 3));
  });

  test('a failed run rejects its own batch only', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8);
    const first = session.run(single(1), ['sum']);
    await tick();
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

describe('BatchedSession through a PriorityGate', () => {
  const bulk = (session: InferenceSession, value: number) => withPriority('bulk', () => session.run(single(value), ['sum']));
  const interactive = (session: InferenceSession, value: number) => withPriority('interactive', () => session.run(single(value), ['sum']));

  /**
   * An embedder and a detector sharing a gate: detect 1 (bulk) runs, then detect 2 and embed 3 wait as bulk and
   * `search` makes one interactive call; answers the order in which the calls were answered.
   */
  async function embedAndDetect(search: (embed: InferenceSession, detect: InferenceSession) => Promise<string>): Promise<string[]> {
    const gate = new PriorityGate();
    const embed = new BatchedSession(new RowSumSession(), 8, gate);
    const detect = new BatchedSession(new RowSumSession(), 1, gate);
    const order: string[] = [];
    const answered = (name: string) => (outputs: Map<string, Float32Tensor>) => void order.push(`${name}:${outputs.get('sum')!.data[0]}`);
    const first = bulk(detect, 1).then(answered('detect'));
    await tick();
    await Promise.all([
      first,
      bulk(detect, 2).then(answered('detect')),
      bulk(embed, 3).then(answered('embed')),
      search(embed, detect).then((name) => void order.push(name)),
    ]);
    return order;
  }

  test('an interactive call goes before waiting bulk ones, in a batch of its own', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8);
    const first = bulk(session, 1);
    await tick();
    await Promise.all([first, bulk(session, 2), bulk(session, 3), bulk(session, 4), interactive(session, 100)]);
    assert.deepEqual(engine.firstValues, [[1], [100], [2, 3, 4]]);
  });

  test('the gate runs one session at a time, the interactive waiter first', async () => {
    const order = await embedAndDetect((_, detect) => interactive(detect, 4).then(() => 'detect:4')); // makes the detect queue wait as interactive: before embed 3
    // Detect 2 waits again after 4 ran, behind embed 3: bulk queues take turns.
    assert.deepEqual(order, ['detect:1', 'detect:4', 'embed:3', 'detect:2']);
  });

  test('bulk batches keep to their own, smaller cap', async () => {
    const engine = new RowSumSession();
    const session = new BatchedSession(engine, 8, new PriorityGate(), 3);
    const first = bulk(session, 0);
    await tick();
    await Promise.all([first, ...Array.from({ length: 7 }, (_, i) => bulk(session, i + 1))]);
    assert.deepEqual(session.batchSizes, [1, 3, 3, 1]);
  });

  test('an interactive call waits at the gate apart from the bulk calls of its session', async () => {
    const order = await embedAndDetect((embed) => interactive(embed, 5).then(() => 'embed:5')); // goes before embed 3, alone
    assert.deepEqual(order, ['detect:1', 'embed:5', 'embed:3', 'detect:2']);
  });

  test('an interactive batch runs beside a bulk batch of its own session under way, where the gate has a slot', async () => {
    const runs: string[] = [];
    let releaseBulk!: () => void;
    const held = new Promise<void>((resolve) => (releaseBulk = resolve));
    const engine: InferenceSession = {
      async run(input) {
        const name = `${input.data[0]}`;
        runs.push(`start ${name}`);
        if (name === '1') await held;
        runs.push(`end ${name}`);
        return new Map([['sum', { data: Float32Array.of(input.data[0]!), shape: [1, 1] }]]);
      },
    };
    const session = new BatchedSession(engine, 8, new PriorityGate(2, 1));
    const bulkRun = bulk(session, 1);
    await tick();
    await interactive(session, 100);
    releaseBulk();
    await bulkRun;
    assert.deepEqual(runs, ['start 1', 'start 100', 'end 100', 'end 1']);
  });

  test('bulk batches run side by side, as many as the gate has bulk slots; interactive ones one at a time', async () => {
    let running = 0;
    const most: Record<string, number> = {};
    const engine: InferenceSession = {
      async run(input) {
        const priority = currentPriority();
        most[priority] = Math.max(most[priority] ?? 0, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        return new Map([['sum', { data: input.data.slice(0, input.shape[0]), shape: [input.shape[0]!, 1] }]]);
      },
    };
    const session = new BatchedSession(engine, 1, new PriorityGate(3, 2), 1);
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((value) => bulk(session, value)));
    assert.deepEqual(answers.map((outputs) => outputs.get('sum')!.data[0]), [1, 2, 3, 4, 5, 6]);
    assert.equal(most.bulk, 2);
    await Promise.all([1, 2, 3, 4].map((value) => interactive(session, value)));
    assert.equal(most.interactive, 1);
  });
});
