/**
 * What the queues do with a message of either kind (an insert item, a job's step) whose work threw. Work that must
 * wait rather than fail goes back to its queue (as its handler sends it) as a new message after its wait, so that
 * waiting spends none of this message's deliveries; any other failure is transient (inference down, storage hiccup)
 * and the queue delivers the message again after a backoff, until past the consumer's max_retries (wrangler.toml) it
 * hands it to the dead-letter queue (dead-letters.ts).
 */
import { InferenceBusyError } from '../ports/inference/types';
import { isFencedWrite } from '../storage/moves';
import type { IngestMessage } from './message';

/** Not yet: the message's work is sent again after DEFER_SECONDS, without counting as a failure. */
export class Deferred extends Error {}
export const DEFER_SECONDS = 5;
/** The longest wait between tries of work the inference service keeps refusing as busy. */
const MAX_BUSY_DELAY_SECONDS = 60;
/** The longest backoff before the queue delivers a failed message again. */
const MAX_RETRY_DELAY_SECONDS = 60;

/**
 * How long work waits before its next try when it must wait rather than fail: deferred, or refused by the inference
 * service as busy (searches go first), backing off while the service stays busy. `busy` counts those refusals.
 */
function waitBeforeNextTry(error: unknown, busy: number): { delaySeconds: number; busy: number } | undefined {
  // A write refused while its application moves to another database (ingest/move.ts) waits as deferred work does.
  if (error instanceof Deferred || isFencedWrite(error)) return { delaySeconds: DEFER_SECONDS, busy };
  if (error instanceof InferenceBusyError) {
    return { delaySeconds: Math.min(MAX_BUSY_DELAY_SECONDS, error.retryAfterSeconds * 2 ** busy), busy: busy + 1 };
  }
  return undefined;
}

/**
 * Ends a message whose work threw `error`: sent again by `send` (to its queue) after its wait and acknowledged, or,
 * after `logFailure`, left to the queue it came from to deliver again with backoff.
 */
export async function tryAgainLater<Body extends IngestMessage>(
  message: Message<Body>,
  error: unknown,
  send: (body: Body, options: { delaySeconds: number }) => Promise<void>,
  logFailure: () => void | Promise<void>,
): Promise<void> {
  const wait = waitBeforeNextTry(error, message.body.busy ?? 0);
  if (wait) {
    await send({ ...message.body, busy: wait.busy }, { delaySeconds: wait.delaySeconds });
    message.ack();
    return;
  }
  await logFailure();
  message.retry({ delaySeconds: Math.min(2 ** message.attempts, MAX_RETRY_DELAY_SECONDS) });
}
