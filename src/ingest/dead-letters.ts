import type { Env } from '../env';
import { settleItem } from '../storage/transactions';
import { FAILED_BY_SYSTEM } from './consumer';
import type { InsertMessage } from './message';

/** Dead-letter queues are named after their queue with `-dlq` (wrangler.toml). */
export const isDeadLetterQueue = (queue: string): boolean => queue.endsWith('-dlq');

/**
 * Messages whose consumer failed on every delivery (it threw, or its isolate died, before settling the item): the
 * item is failed with the system error, so that its transaction still reaches 100. An item settled meanwhile stays
 * as it is.
 */
export async function consumeDeadLetters(batch: MessageBatch<InsertMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const { transId, index } = message.body;
    console.error(JSON.stringify({ event: 'insert_dead_letter', transId, index, attempts: message.attempts }));
    await settleItem(env.DB, transId, index, FAILED_BY_SYSTEM);
    message.ack();
  }
}
