/**
 * One queue message per accepted image; everything else about it waits in D1 (messages are capped at 128 KB).
 * `busy`: how many times the inference service has refused it as busy, for the backoff of the next try.
 */
export type InsertMessage = { transId: number; index: number; busy?: number };

/** A queue's sendBatch takes at most this many messages. */
export const MAX_MESSAGES_PER_SEND = 100;

/**
 * Sends one message for each item (at most MAX_MESSAGES_PER_SEND), carrying only its transaction and index: from
 * /insert, from the sweeper for a message that looks lost, and from the consumer for an item that must wait.
 */
export async function sendInsertMessages(queue: Queue<InsertMessage>, items: InsertMessage[], options?: QueueSendBatchOptions): Promise<void> {
  await queue.sendBatch(items.map(({ transId, index, busy }) => ({ body: busy ? { transId, index, busy } : { transId, index } })), options);
}
