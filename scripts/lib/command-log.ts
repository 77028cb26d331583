import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './wrangler-env.ts';

/**
 * The log file a command sends the local stack's output to (the migrations, wrangler's binding tables and request
 * lines, the inference service), so that the terminal shows its progress and its tables only: `npm start`,
 * `npm run bench`, `npm run eval` and `npm run soak`. A failed run shows the log's last lines and where the whole is.
 */

export type CommandLog = {
  readonly file: string;
  /** A file descriptor to hand to startLocalStack's `log`, the inference service's `output` or a child's stdio. */
  readonly fd: number;
  /** The file, relative to the repository, as the messages name it. */
  readonly shown: string;
  /** `message`, then the log's last `lines` lines and where the whole log is: what a failed run prints. */
  failure(message: string, lines?: number): string;
  close(): void;
};

/** Lines of the log a failure shows. */
const TAIL_LINES = 30;

/** A command's log: `.local/logs/<name>.log`. */
export const commandLogFile = (name: string): string => path.join(ROOT, '.local/logs', `${name}.log`);

/** Opens (empties) `file` for a run's output. */
export function openCommandLog(file: string): CommandLog {
  mkdirSync(path.dirname(file), { recursive: true });
  const fd = openSync(file, 'w');
  const shown = path.relative(ROOT, file);
  let open = true;
  return {
    file,
    fd,
    shown,
    failure: (message, lines = TAIL_LINES) => failureWithTail(message, file, lines),
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** `message`, the last `lines` lines of the log `file` (where wrangler's and the service's errors are), and where it is. */
export function failureWithTail(message: string, file: string, lines = TAIL_LINES): string {
  const shown = path.relative(ROOT, file);
  let tail: string[];
  try {
    tail = readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines);
  } catch {
    return `${message}\n\n(no log at ${shown})`;
  }
  return `${message}\n\nThe last lines of ${shown}:\n${tail.map((line) => `  ${line}`).join('\n')}\n\nThe whole log: ${shown}`;
}
