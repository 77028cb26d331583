import { createMiddleware } from 'hono/factory';
import { setMetric } from 'hono/timing';
import type { AppEnv } from '../env';
import { RoundTripMeter } from '../storage/d1-meter';

/** What countRoundTrips sets: the request's meter, which readNear asks for a session's env. */
export type RoundTripVariables = { roundTrips: RoundTripMeter };

declare module 'hono' {
  interface ContextVariableMap extends RoundTripVariables {}
}

/**
 * Counts the request's round trips to D1 (primary and replica) and to the vector index, through a copy of the env
 * whose bindings count them, and answers them on every answer, failures included (onError has answered by the time
 * this resumes): `Server-Timing: d1-primary;dur=<ms>;desc="<count>"`, `d1-replica`, `vector-index` (README, Deploy).
 * Runs inside timing(), which writes the header.
 */
export const countRoundTrips = createMiddleware<AppEnv>(async (c, next) => {
  const meter = new RoundTripMeter(c.env);
  c.set('roundTrips', meter);
  c.env = meter.envReading('primary');
  await next();
  for (const { kind, count, ms } of meter.tallies()) setMetric(c, kind, ms, String(count));
});

/**
 * A search's reads: through a D1 session that may read a replica near the Worker; a write in it still goes to the
 * primary, and the session reads its own writes (README, Deploy).
 */
export const readNear = createMiddleware<AppEnv>(async (c, next) => {
  c.env = c.var.roundTrips.envReading('near');
  await next();
});
