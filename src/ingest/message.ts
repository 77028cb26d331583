/** One queue message per accepted image; everything else about it waits in D1 (messages are capped at 128 KB). */
export type InsertMessage = { transId: number; index: number };

/** A queue's sendBatch takes at most this many messages. */
export const MAX_MESSAGES_PER_SEND = 100;

/**
 * Sends one message for each item (at most MAX_MESSAGES_PER_SEND), carrying only its transaction and index: from
 * /insert, from the sweeper for a message that looks lost, and from the consumer for an item that must wait.
 */
export async function sendInsertMessages(queue: Queue<InsertMessage>, items: InsertMessage[], options?: QueueSendBatchOptions): Promise<void> {
  await queue.sendBatch(items.map(({ transId, index }) => ({ body: { transId, index } })), options);
}
