import { formatTimestamp } from '../time';

const FIRST_BACK_OFF_MINUTES = 10;
/** The longest a failing record waits before its next try. */
const MAX_BACK_OFF_MINUTES = 24 * 60;

/**
 * When a periodic job's record that failed is tried again (stale vector records, retired versions): 10 minutes after
 * its first failure, doubling with each one to a day, so that a record that keeps failing never holds the others back
 * and is still tried daily. `failures` counts those before this one.
 */
export function retryAt(failures: number, now: Date): string {
  const minutes = Math.min(MAX_BACK_OFF_MINUTES, FIRST_BACK_OFF_MINUTES * 2 ** failures);
  return formatTimestamp(new Date(now.getTime() + minutes * 60_000));
}
