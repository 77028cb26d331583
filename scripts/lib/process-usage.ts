import { readdirSync, readFileSync } from 'node:fs';

/** Resident memory and CPU time of the local stack's processes, read from /proc: `npm run bench` and `npm run measure:memory`. */

export type Memory = { peakRssMiB: number; hwmMiB: number };

/**
 * Samples the resident memory of a process tree every 250 ms, grouped by `group` (a process's command line to a
 * label, or undefined to skip it): the largest sum of VmRSS seen, and the sum of the processes' VmHWM (their own peaks).
 */
export function sampleMemory(root: number, group: (command: string) => string | undefined): { stop(): Record<string, Memory> } {
  const peaks = new Map<string, number>();
  const hwm = new Map<string, Map<number, number>>();
  const sample = (): void => {
    const rss = new Map<string, number>();
    for (const pid of descendants(root)) {
      const label = group(readProc(pid, 'cmdline').replaceAll('\0', ' '));
      const status = readProc(pid, 'status');
      if (!label || !status) continue;
      const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
      rss.set(label, (rss.get(label) ?? 0) + kib('VmRSS'));
      hwm.set(label, (hwm.get(label) ?? new Map()).set(pid, kib('VmHWM')));
    }
    for (const [label, kib] of rss) peaks.set(label, Math.max(peaks.get(label) ?? 0, kib));
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    stop() {
      sample();
      clearInterval(timer);
      const mib = (kib: number): number => Math.round(kib / 1024);
      return Object.fromEntries(
        [...peaks].map(([label, kib]) => [label, { peakRssMiB: mib(kib), hwmMiB: mib([...hwm.get(label)!.values()].reduce((a, b) => a + b, 0)) }]),
      );
    },
  };
}

/** Clock ticks a second in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user and system, every thread) the processes of a tree have used so far, summed by `group`. */
export function cpuSeconds(root: number, group: (command: string) => string | undefined): Map<string, number> {
  const used = new Map<string, number>();
  for (const pid of descendants(root)) {
    const label = group(readProc(pid, 'cmdline').replaceAll('\0', ' '));
    // utime and stime: the 12th and 13th fields after the parenthesised command name.
    const fields = readProc(pid, 'stat').split(') ')[1]?.split(' ');
    if (!label || !fields) continue;
    used.set(label, (used.get(label) ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
  }
  return used;
}

const readProc = (pid: number, file: string): string => {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return ''; // gone between listing and reading
  }
};

/** `root` and every process below it, from the parent pids in /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    // The parent pid is the second field after the parenthesised command name.
    const parent = Number(readProc(pid, 'stat').split(') ')[1]?.split(' ')[1]);
    if (parent) children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const found = [root];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]!) ?? []));
  return found;
}

/** Worker processes and the inference service, whichever command started them. */
export const processKind = (command: string): string | undefined =>
  /\/workerd /.test(command) ? 'worker' : command.includes('inference/src/server.ts') ? 'inference' : undefined;

