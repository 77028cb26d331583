import type { Env } from '../env';
import { deleteRetiredSoon } from '../storage/retired';
import { handleInsertMessage } from './insert-item';
import { isReindexMessage, type IngestMessage, type InsertMessage, type ReindexMessage } from './message';
import { handleReindexMessage } from './reindex';

/**
 * The ingest queue's batches: insert items side by side with a reindex's steps, each message handed to its kind's
 * handler (insert-item.ts, reindex.ts), which acknowledges it or has it tried again (retry-policy.ts).
 */
export async function consumeIngestBatch(batch: MessageBatch<IngestMessage>, env: Env): Promise<void> {
  const inserts = batch.messages.filter((message): message is Message<InsertMessage> => !isReindexMessage(message.body));
  const reindexes = batch.messages.filter((message): message is Message<ReindexMessage> => isReindexMessage(message.body));
  const [retiring] = await Promise.all([
    Promise.all(inserts.map((message) => handleInsertMessage(env, message))),
    Promise.all(reindexes.map((message) => handleReindexMessage(env, message))),
  ]);
  // Once per application of the batch, not once per image: each call reads and deletes the same backlog.
  const apps = new Set(retiring.filter((appId) => appId !== undefined));
  await Promise.all([...apps].map((appId) => deleteRetiredSoon(env, appId)));
}
