import { env, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { addToMinute, countUsage, secondsLeftInMinute, type UsageCounter } from '../../src/storage/usage-counter';

let counter = 0;
const freshApp = () => `usage-${Date.now()}-${counter++}`;

/** Counts are per minute: a test whose calls must fall in one minute starts with enough of it left. */
async function startOfEnoughMinute(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
}

describe('per-minute usage counter (one Durable Object per application)', () => {
  it('adds to the current minute and starts a new minute from zero', () => {
    const minute = 29_000_000;
    const first = addToMinute(undefined, 1, 100, minute * 60_000 + 5_000);
    expect(first).toEqual({ window: minute, searches: 1, uploadBytes: 100 });
    expect(addToMinute(first, 1, 50, minute * 60_000 + 59_999)).toEqual({ window: minute, searches: 2, uploadBytes: 150 });
    expect(addToMinute(first, 0, 7, (minute + 1) * 60_000)).toEqual({ window: minute + 1, searches: 0, uploadBytes: 7 });
  });

  it('answers the seconds to the next minute, 1 to 60', () => {
    expect(secondsLeftInMinute(60_000 * 7)).toBe(60);
    expect(secondsLeftInMinute(60_000 * 7 + 59_999)).toBe(1);
    expect(secondsLeftInMinute(60_000 * 7 + 30_500)).toBe(30);
  });

  it('counts parallel calls of one application one after another, each seeing a distinct total', async () => {
    const app = freshApp();
    await startOfEnoughMinute();
    const used = await Promise.all(Array.from({ length: 50 }, () => countUsage(env.USAGE_COUNTER, app, 1, 10)));
    expect(used.map((usage) => usage.searches).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, k) => k + 1));
    expect(Math.max(...used.map((usage) => usage.uploadBytes))).toBe(500);
    for (const usage of used) expect(usage.secondsLeft).toBeGreaterThanOrEqual(1);
  });

  it('keeps each application apart and the minute in storage', async () => {
    const [a, b] = [freshApp(), freshApp()];
    await countUsage(env.USAGE_COUNTER, a, 1, 1000);
    expect(await countUsage(env.USAGE_COUNTER, b, 1, 0)).toMatchObject({ searches: 1, uploadBytes: 0 });
    const stored = await runInDurableObject(env.USAGE_COUNTER.getByName(a), (_: UsageCounter, state) => state.storage.kv.get('minute'));
    expect(stored).toMatchObject({ searches: 1, uploadBytes: 1000 });
  });
});
