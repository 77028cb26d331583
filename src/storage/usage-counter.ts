import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';

/** What one minute of an application's calls and query images used, this count included. */
export type MinuteUsage = { searches: number; uploadBytes: number; secondsLeft: number };

/** An application's counts in one minute (`window`: minutes since the epoch, UTC). */
export type MinuteCounts = { window: number; searches: number; uploadBytes: number };

const MINUTE_MS = 60_000;
const KEY = 'minute';

/** The counts of the minute `now` falls in once these calls and bytes are added: a new minute starts from zero. */
export function addToMinute(kept: MinuteCounts | undefined, calls: number, uploadBytes: number, now: number): MinuteCounts {
  const window = Math.floor(now / MINUTE_MS);
  const base = kept?.window === window ? kept : { window, searches: 0, uploadBytes: 0 };
  return { window, searches: base.searches + calls, uploadBytes: base.uploadBytes + uploadBytes };
}

/** Seconds until the next minute starts, 1 to 60: what `Retry-After` says. */
export const secondsLeftInMinute = (now: number): number => 60 - Math.floor((now % MINUTE_MS) / 1000);

/**
 * The per-minute counts of one application (`searches_per_minute`, `upload_bytes_per_minute`): one object per
 * application, so its counts are added one after another and the limits are exact (docs/decisions.md, "Per-minute
 * limits"). Only the current minute is kept, in the object's own storage, so a restarted object goes on counting it.
 */
export class UsageCounter extends DurableObject<Env> {
  /** Adds a call's count and bytes to the current minute and answers the minute's totals. */
  count(calls: number, uploadBytes: number): MinuteUsage {
    const now = Date.now();
    const minute = addToMinute(this.ctx.storage.kv.get<MinuteCounts>(KEY), calls, uploadBytes, now);
    this.ctx.storage.kv.put(KEY, minute);
    return { searches: minute.searches, uploadBytes: minute.uploadBytes, secondsLeft: secondsLeftInMinute(now) };
  }
}

/** Counts calls and query-image bytes in the application's current minute: one call to its UsageCounter. */
export async function countUsage(counters: DurableObjectNamespace<UsageCounter>, appId: string, calls: number, uploadBytes: number): Promise<MinuteUsage> {
  return counters.getByName(appId).count(calls, uploadBytes);
}
