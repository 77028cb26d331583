/**
 * What Linux says of a process's threads in /proc: their CPU time, niceness and scheduling policy, for the tests of
 * where bulk work runs (onnx.test.ts, bulk-process.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Linux's SCHED_IDLE, as /proc reports a thread's policy. */
export const SCHED_IDLE = 5;

/** A process (`self`: this one) or one of its threads, as its stat file tells. */
export type ThreadStat = { ticks: number; niceness: number; policy: number };

/** The stat file's fields after the parenthesised command name: utime, stime, nice and policy are the 12th, 13th, 17th and 39th. */
function readStat(file: string): ThreadStat {
  const fields = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
  return { ticks: Number(fields[11]) + Number(fields[12]), niceness: Number(fields[16]), policy: Number(fields[38]) };
}

/** Each thread of a process, by thread id. */
export function threadStats(pid: number | 'self'): Map<string, ThreadStat> {
  return new Map(readdirSync(`/proc/${pid}/task`).map((task) => [task, readStat(`/proc/${pid}/task/${task}/stat`)]));
}

/** A whole process: its CPU time counts every thread it ever had. */
export const processStat = (pid: number): ThreadStat => readStat(`/proc/${pid}/stat`);
