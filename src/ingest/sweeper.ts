import type { Env } from '../env';
import { findStalledItems, recordSweep, settleItem } from '../storage/transactions';
import { formatTimestamp } from '../time';
import { FAILED_BY_SYSTEM } from './dead-letters';

/**
 * A transaction with no settled item for this long may have lost queue messages (a consumer that died past its
 * retries without a dead-letter queue, a local queue lost on restart): its pending items are sent again. Longer than
 * an item's whole retry budget (5 deliveries, each a 20 s download and inference calls, 30 s of backoff).
 */
export const STALL_MINUTES = 30;
/** Re-sends of one item before it is given up as failed: at least this many stall periods without progress. */
export const MAX_SWEEPS = 3;
/** Items looked at per run; a larger backlog is taken over the next runs. */
const ITEMS_PER_RUN = 1000;
/** A queue's sendBatch takes at most 100 messages. */
const SEND_CHUNK = 100;

/**
 * The cron half of "nothing accepted is ever lost": every pending item of a stalled transaction is sent again (a
 * redelivery of an item already settled is a no-op), and one re-sent MAX_SWEEPS times in vain is failed, so that
 * every transaction reaches 100.
 */
export async function sweepStalledInserts(env: Env, now: Date): Promise<{ resent: number; failed: number }> {
  const before = formatTimestamp(new Date(now.getTime() - STALL_MINUTES * 60_000));
  const stalled = await findStalledItems(env.DB, before, ITEMS_PER_RUN);
  const exhausted = stalled.filter((item) => item.sweeps >= MAX_SWEEPS);
  const resend = stalled.filter((item) => item.sweeps < MAX_SWEEPS);
  for (const item of exhausted) await settleItem(env.DB, item.transId, item.index, FAILED_BY_SYSTEM);
  for (let start = 0; start < resend.length; start += SEND_CHUNK) {
    const chunk = resend.slice(start, start + SEND_CHUNK);
    // Sent before it is counted: a crash in between costs one more re-send at most, never a lost item.
    await env.INSERT_QUEUE.sendBatch(chunk.map(({ transId, index }) => ({ body: { transId, index } })));
    await recordSweep(env.DB, chunk);
  }
  if (stalled.length > 0) console.warn(JSON.stringify({ event: 'insert_sweep', resent: resend.length, failed: exhausted.length }));
  return { resent: resend.length, failed: exhausted.length };
}
