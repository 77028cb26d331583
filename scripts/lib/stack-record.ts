import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './wrangler-env.ts';

/**
 * What `npm start` records of the stack it runs, in `<STACK_DIR>/stack.json`, so that `npm run import` and
 * `npm run admin` reach it on whatever PORT it was started (README, Use it).
 */
export type StackRecord = {
  url: string;
  port: number;
  inference_url: string;
  /** npm start's process: a record whose process is gone is stale. */
  pid: number;
  /** Where the admin token came from: npm start's environment (not recorded) or the default `dev-admin-token`. */
  admin_token: 'ADMIN_TOKEN' | 'default';
  /** The demo application's keys (`demo-app.json`). */
  demo_keys: string;
  log: string;
};

/** Where `npm start` keeps its local data, the demo application's keys and its record: STACK_DIR, default `.wrangler`. */
export const stackDir = (): string => (process.env.STACK_DIR ? path.resolve(process.env.STACK_DIR) : path.join(ROOT, '.wrangler'));

/** The demo application's keys, in the stack's folder. */
export const DEMO_KEYS = 'demo-app.json';

const recordFile = (): string => path.join(stackDir(), 'stack.json');

export function writeStackRecord(record: StackRecord): void {
  mkdirSync(stackDir(), { recursive: true });
  writeFileSync(recordFile(), `${JSON.stringify(record, null, 2)}\n`);
}

/** Removes the record if it is this process's (a later npm start on the same folder may have replaced it). */
export function removeStackRecord(): void {
  if (readStackRecord()?.pid === process.pid) rmSync(recordFile(), { force: true });
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The running stack's record; undefined when there is none or its npm start is gone. */
export function readStackRecord(): StackRecord | undefined {
  if (!existsSync(recordFile())) return undefined;
  const record = JSON.parse(readFileSync(recordFile(), 'utf8')) as StackRecord;
  return isRunning(record.pid) ? record : undefined;
}

/** The API a command talks to, and where that came from: API_URL, else PORT, else npm start's record, else port 8787. */
export function apiUrlFromEnv(): { url: string; from: string; record?: StackRecord } {
  const { API_URL, PORT } = process.env;
  if (API_URL) return { url: API_URL, from: 'API_URL' };
  if (PORT) return { url: `http://127.0.0.1:${PORT}`, from: 'PORT' };
  const record = readStackRecord();
  if (record) return { url: record.url, from: `from npm start's ${path.relative(ROOT, recordFile())}`, record };
  return { url: 'http://127.0.0.1:8787', from: `the default: ${path.relative(ROOT, recordFile())} names no running npm start` };
}
