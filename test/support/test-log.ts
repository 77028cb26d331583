import { appendFileSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a Worker test suite prints besides its results: the Worker's event logs (a JSON line per request, the insert
 * errors the fault tests cause on purpose) and workerd's reports of the connections the tests cut. They go to
 * `.local/logs/test-<suite>.log`, and the suite's end says how many lines went there.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');

export const testLogOf = (suite: string): string => path.join(ROOT, '.local/logs', `test-${suite}.log`);

/** A file descriptor for what a test's local stack prints (migrations, wrangler, the inference service), kept apart. */
export function stackLogOf(suite: string): number {
  const file = testLogOf(suite);
  mkdirSync(path.dirname(file), { recursive: true });
  return openSync(file, 'w');
}

/** vitest's `onConsoleLog`: the Worker's event logs go to `file`, the rest is shown. */
export const keepWorkerEventsIn =
  (file: string) =>
  (log: string): false | undefined => {
    if (!/^\{"event":/.test(log.trimStart())) return undefined;
    appendFileSync(file, log.endsWith('\n') ? log : `${log}\n`);
    return false;
  };

/**
 * workerd's report of a lost connection, which the vitest pool writes to this process's output (stdout: workerd's
 * lines are not structured logs): its first line, and the `stack:` line of addresses that may follow it apart.
 */
const CUT_CONNECTION = /^(uncaught exception; |exception = )[^\n]*(disconnected|Network connection lost)/;
const WORKERD_STACK = /^stack: \S*workerd/;

/** Moves `stream`'s reports of lost connections to `file`; answers the function that puts the stream back. */
function divert(stream: NodeJS.WriteStream, file: string): () => void {
  const write = stream.write;
  let afterCut = false;
  stream.write = function (chunk: string | Uint8Array, ...rest: unknown[]): boolean {
    const text = String(chunk);
    const cut = CUT_CONNECTION.test(text) || (afterCut && WORKERD_STACK.test(text));
    afterCut = cut;
    if (!cut) return (write as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
    appendFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
    return true;
  } as typeof stream.write;
  return () => {
    stream.write = write;
  };
}

/**
 * Starts the suite's log afresh and moves workerd's reports of lost connections to it; answers the function that
 * stops that and says, once, how many lines the log holds.
 */
export function keepSuiteNoiseIn(file: string): () => void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '');
  const restore = [divert(process.stdout, file), divert(process.stderr, file)];
  return () => {
    for (const put of restore) put();
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
    if (lines > 0) console.log(`${lines} lines of the Worker's event logs and workerd's reports of cut connections: in ${path.relative(ROOT, file)}`);
  };
}
