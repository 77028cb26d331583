import { describe, expect, it } from 'vitest';
import { endpointRows, summarizeWrites, type Write } from '../../scripts/lib/soak-report.ts';

/** A write accepted `atSeconds` into the traffic, at 100 % after `doneMs` (undefined: unfinished). */
const write = (kind: Write['kind'], atSeconds: number, doneMs?: number, failure?: string): Write => ({
  kind,
  transId: Math.round(atSeconds * 1000),
  acceptedMs: atSeconds * 1000,
  ...(doneMs !== undefined && { doneMs }),
  ...(failure && { failure }),
});

describe("npm run soak's report (scripts/lib/soak-report.ts)", () => {
  it('times each kind of write to 100 % overall and by the minute it was accepted in, leaving the unfinished out of the times', () => {
    const writes = [
      ...Array.from({ length: 20 }, (_, i) => write('metadata', i, 100 * (i + 1))), // minute 1: 100 .. 2000 ms
      ...Array.from({ length: 20 }, (_, i) => write('metadata', 60 + i, 1000 + 100 * i)), // minute 2: 1000 .. 2900 ms
      write('image', 10, 3000),
      write('image', 70, 5000),
      write('image', 119.9), // unfinished
    ];
    const { byKind, perMinute } = summarizeWrites(writes, 2);
    expect(perMinute.map(({ minute }) => minute)).toEqual([1, 2]);
    expect(perMinute[0]!.byKind.metadata).toEqual({ accepted: 20, finished: 20, p50: 1100, p95: 2000 });
    expect(perMinute[1]!.byKind.metadata).toEqual({ accepted: 20, finished: 20, p50: 2000, p95: 2900 });
    expect(perMinute[1]!.byKind.image).toEqual({ accepted: 2, finished: 1, p50: 5000, p95: 5000 });
    expect(byKind.metadata).toMatchObject({ accepted: 40, finished: 40, failed: 0, unfinished: 0, p50GrowthPerMinute: 900 });
    expect(byKind.image).toMatchObject({ accepted: 3, finished: 2, unfinished: 1, p50: 5000, p95: 5000, p50GrowthPerMinute: 2000 });
  });

  it('counts a failed write as finished and failed; a minute without writes has no times, and no growth is fitted to one point', () => {
    const { byKind, perMinute } = summarizeWrites([write('image', 5, 800, '201'), write('image', 6, 900)], 3);
    expect(byKind.image).toMatchObject({ accepted: 2, finished: 2, failed: 1, unfinished: 0, p50GrowthPerMinute: null });
    expect(perMinute[2]!.byKind.image).toEqual({ accepted: 0, finished: 0, p50: null, p95: null });
    expect(byKind.metadata).toMatchObject({ accepted: 0, p50: null, p95: null, p50GrowthPerMinute: null });
  });

  it('puts writes accepted past the last whole minute into the last one, and a fraction of a minute counts as one', () => {
    const { perMinute } = summarizeWrites([write('metadata', 30, 100), write('metadata', 61, 200)], 0.5);
    expect(perMinute).toHaveLength(1);
    expect(perMinute[0]!.byKind.metadata.accepted).toBe(2);
  });

  it('counts the answers of each endpoint by outcome, timing the OK ones only', () => {
    const rows = endpointRows([
      { endpoint: '/search', outcome: 'ok', ms: 10 },
      { endpoint: '/remove', outcome: 'non-ok', ms: 5, detail: '102' },
      { endpoint: '/search', outcome: 'busy', ms: 1 },
      { endpoint: '/search', outcome: 'ok', ms: 30 },
      { endpoint: '/search', outcome: '5xx', ms: 2 },
      { endpoint: '/remove', outcome: 'error', ms: 3 },
    ]);
    expect(rows.map(({ endpoint }) => endpoint)).toEqual(['/search', '/remove']);
    expect(rows[0]).toMatchObject({ requests: 4, ok: 2, busy: 1, 'non-ok': 0, '5xx': 1, error: 0, latency: { requests: 2, p50: 30, mean: 20 } });
    expect(rows[1]).toMatchObject({ requests: 2, ok: 0, 'non-ok': 1, error: 1, latency: { requests: 0 } });
  });
});
