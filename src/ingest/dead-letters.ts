import type { Env } from '../env';
import { GENERAL } from '../http/messages';
import { settleItem, type ItemOutcome } from '../storage/transactions';
import type { InsertMessage } from './message';

/** How an item ends when retrying gave up on it: here, and in the sweeper. */
export const FAILED_BY_SYSTEM: ItemOutcome = { state: 'failed', code: 500, message: GENERAL.systemError };

/** Dead-letter queues are named after their queue with `-dlq` (wrangler.toml). */
export const isDeadLetterQueue = (queue: string): boolean => queue.endsWith('-dlq');

/**
 * Messages the consumer could not process within its retries (inference down, storage failing, or the consumer
 * throwing or dying itself): the item is failed with the system error, so that its transaction still reaches 100.
 * An item settled meanwhile stays as it is.
 */
export async function consumeDeadLetters(batch: MessageBatch<InsertMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const { transId, index } = message.body;
    console.error(JSON.stringify({ event: 'insert_dead_letter', transId, index, attempts: message.attempts }));
    await settleItem(env.DB, transId, index, FAILED_BY_SYSTEM);
    message.ack();
  }
}
