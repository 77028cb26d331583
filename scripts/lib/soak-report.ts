import { latencyOf, type Latency } from './latency.ts';

/**
 * `npm run soak`'s figures from what it recorded: the writes' times to 100 % by kind and by the minute they were
 * accepted in, and the answers by endpoint. Pure (no I/O, no Node modules): test/unit runs it.
 */

export type WriteKind = 'metadata' | 'image';
export const WRITE_KINDS: readonly WriteKind[] = ['metadata', 'image'];

/**
 * An accepted write (its /insert answered OK): when, in ms since the traffic began; once its transaction reported
 * 100 %, how long that took in ms (`doneMs`) and the failure it listed, if any. Without `doneMs` it is unfinished.
 */
export type Write = { kind: WriteKind; transId: number; acceptedMs: number; doneMs?: number; failure?: string };

/** Times to 100 %, in ms, of the finished writes among `writes`. */
export type WriteTimes = { accepted: number; finished: number; p50: number | null; p95: number | null };

export type KindSummary = WriteTimes & {
  failed: number;
  unfinished: number;
  /** How the per-minute p50 moved, in ms a minute: the slope of a line fitted to them (null under two minutes with writes). */
  p50GrowthPerMinute: number | null;
};

export type WriteSummary = {
  byKind: Record<WriteKind, KindSummary>;
  /** Minute 1 holds the writes accepted in the traffic's first 60 s, and so on; the last minute takes any accepted later. */
  perMinute: { minute: number; byKind: Record<WriteKind, WriteTimes> }[];
};

function timesOf(writes: readonly Write[]): WriteTimes {
  const done = writes.flatMap(({ doneMs }) => (doneMs === undefined ? [] : [doneMs]));
  const latency = latencyOf(done);
  return { accepted: writes.length, finished: done.length, p50: done.length ? latency.p50 : null, p95: done.length ? latency.p95 : null };
}

/** Least-squares slope of `points` (x, y), or null under two points. */
function slope(points: readonly [number, number][]): number | null {
  if (points.length < 2) return null;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const spread = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0) / spread;
}

/** The writes of a run of `minutes` minutes of traffic (a fraction counts as a minute of its own). */
export function summarizeWrites(writes: readonly Write[], minutes: number): WriteSummary {
  const count = Math.max(1, Math.ceil(minutes));
  const minuteOf = (write: Write): number => Math.min(count, Math.max(1, Math.floor(write.acceptedMs / 60_000) + 1));
  const perMinute = Array.from({ length: count }, (_, index) => {
    const inMinute = writes.filter((write) => minuteOf(write) === index + 1);
    return {
      minute: index + 1,
      byKind: Object.fromEntries(WRITE_KINDS.map((kind) => [kind, timesOf(inMinute.filter((write) => write.kind === kind))])) as Record<WriteKind, WriteTimes>,
    };
  });
  const byKind = Object.fromEntries(
    WRITE_KINDS.map((kind): [WriteKind, KindSummary] => {
      const ofKind = writes.filter((write) => write.kind === kind);
      const growth = perMinute.flatMap(({ minute, byKind: times }): [number, number][] => (times[kind].p50 === null ? [] : [[minute, times[kind].p50!]]));
      return [
        kind,
        {
          ...timesOf(ofKind),
          failed: ofKind.filter((write) => write.doneMs !== undefined && write.failure !== undefined).length,
          unfinished: ofKind.filter((write) => write.doneMs === undefined).length,
          p50GrowthPerMinute: slope(growth),
        },
      ];
    }),
  ) as Record<WriteKind, KindSummary>;
  return { byKind, perMinute };
}

/**
 * How a request was answered: `ok` (status OK), `busy` (the spec's "System busy", 429 or 503), `non-ok` (any other
 * answer of HTTP status under 500), `5xx`, or `error` (no answer: the connection failed).
 */
export type Outcome = 'ok' | 'busy' | 'non-ok' | '5xx' | 'error';
export type Answer = { endpoint: string; outcome: Outcome; ms: number; detail?: string };
export type EndpointRow = { endpoint: string; requests: number } & Record<Outcome, number> & { latency: Latency };

/** The answers by endpoint, in the order the endpoints were first called; the latency of the OK ones. */
export function endpointRows(answers: readonly Answer[]): EndpointRow[] {
  const endpoints = [...new Set(answers.map(({ endpoint }) => endpoint))];
  return endpoints.map((endpoint) => {
    const of = answers.filter((answer) => answer.endpoint === endpoint);
    const counted = (outcome: Outcome): number => of.filter((answer) => answer.outcome === outcome).length;
    return {
      endpoint,
      requests: of.length,
      ok: counted('ok'),
      busy: counted('busy'),
      'non-ok': counted('non-ok'),
      '5xx': counted('5xx'),
      error: counted('error'),
      latency: latencyOf(of.filter((answer) => answer.outcome === 'ok').map(({ ms }) => ms)),
    };
  });
}
