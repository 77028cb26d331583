import { CONTROL_DATABASE } from '../storage/databases';
import type { ItemKind } from '../storage/transactions';

/**
 * One queue message per accepted image (itemQueue says which queue); everything else about it waits in D1 (messages are capped at 128 KB), in the
 * catalog `database` of its application (absent in a message sent before there were several: the control database).
 * `busy`: how many times the inference service has refused it as busy, for the backoff of the next try.
 */
export type InsertMessage = { transId: number; index: number; database?: string; busy?: number };
/** Step `step` of an application's reindex (ingest/reindex.ts); `busy` as above. */
export type ReindexMessage = { reindex: string; step: number; busy?: number };
/** Step `step` of an application's tuning (ingest/tuning.ts); `busy` as above. */
export type TuningMessage = { tuning: string; step: number; busy?: number };
/** Step `step` of an application's move to another database (ingest/move.ts); `busy` as above. */
export type MoveMessage = { move: string; step: number; busy?: number };
/** A step of an admin job: resumable from its progress in D1, each step sending the next (ingest/job-step.ts). */
export type JobMessage = ReindexMessage | TuningMessage | MoveMessage;
/**
 * The ingest queue carries both: every job that needs the inference service's bulk line, or reads what it wrote. The
 * update queue carries insert messages only, of metadata-only updates (itemQueue).
 */
export type IngestMessage = InsertMessage | JobMessage;

export const isJobMessage = (message: IngestMessage): message is JobMessage => !('transId' in message);
/** The catalog database an insert message's item is in; the control database for one sent before there were several. */
export const messageDatabase = (message: InsertMessage): string => message.database ?? CONTROL_DATABASE;
export const isReindexMessage = (message: IngestMessage): message is ReindexMessage => 'reindex' in message;
export const isMoveMessage = (message: IngestMessage): message is MoveMessage => 'move' in message;

/** A queue's sendBatch takes at most this many messages. */
export const MAX_MESSAGES_PER_SEND = 100;

/** The queues an insert item's message may go to (wrangler.toml). */
export type ItemQueues = { INSERT_QUEUE: Queue<IngestMessage>; UPDATE_QUEUE: Queue<IngestMessage> };

/**
 * The one rule of which queue an insert item's message goes to, whoever sends it: a metadata-only update to the update
 * queue, where it never waits behind images being downloaded and embedded; an image to the ingest queue.
 */
export const itemQueue = (queues: ItemQueues, kind: ItemKind): Queue<IngestMessage> => (kind === 'metadata' ? queues.UPDATE_QUEUE : queues.INSERT_QUEUE);

/** An insert item's message, with its item's kind (storage/transactions.ts, itemKind), which picks its queue. */
export type ItemMessage = InsertMessage & { kind: ItemKind };

/**
 * Sends one message for each item (at most MAX_MESSAGES_PER_SEND), each to its queue (itemQueue), carrying only its
 * transaction, index and database: from /insert, from the sweeper for a message that looks lost, from a move for
 * items pending in its target, and from the consumer for an item that must wait.
 */
export async function sendInsertMessages(queues: ItemQueues, items: ItemMessage[], options?: QueueSendBatchOptions): Promise<void> {
  const kinds = [...new Set(items.map((item) => item.kind))];
  await Promise.all(
    kinds.map((kind) =>
      itemQueue(queues, kind).sendBatch(
        items
          .filter((item) => item.kind === kind)
          .map(({ transId, index, database, busy }) => ({ body: { transId, index, ...(database === undefined ? {} : { database }), ...(busy ? { busy } : {}) } })),
        options,
      ),
    ),
  );
}

/** Sends a step of an application's job: from the admin API, the sweeper, and the step before. */
export async function sendJobMessage(queue: Queue<IngestMessage>, message: JobMessage, options?: { delaySeconds?: number }): Promise<void> {
  const { busy, ...body } = message;
  await queue.send(busy ? { ...body, busy } : body, options?.delaySeconds ? { delaySeconds: options.delaySeconds } : undefined);
}
