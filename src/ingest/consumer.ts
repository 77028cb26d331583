import pMap from 'p-map';
import type { Env } from '../env';
import { deleteRetiredSoon } from '../storage/retired';
import type { PendingItem } from '../storage/transactions';
import { handleInsertMessage, pendingItemOf } from './insert-item';
import { INSERT_ITEMS_IN_FLIGHT } from './in-flight';
import { handleJobMessage } from './job-step';
import {
  isJobMessage,
  isMoveMessage,
  isReindexMessage,
  sendJobMessage,
  type IngestMessage,
  type InsertMessage,
  type JobMessage,
  type MoveMessage,
  type ReindexMessage,
  type TuningMessage,
} from './message';
import { MOVE_JOB } from './move';
import { REINDEX_JOB } from './reindex';
import { TUNING_JOB } from './tuning';

type Retiring = { id: string; database: string } | undefined;

/** Once per application of the batch, not once per image: each call reads and deletes the same backlog. */
async function deleteRetiredOf(env: Env, retiring: Retiring[]): Promise<void> {
  const apps = new Map(retiring.flatMap((app) => (app === undefined ? [] : [[app.id, app]])));
  await Promise.all([...apps.values()].map((app) => deleteRetiredSoon(env, app)));
}

/** A batch's messages by kind: insert items, and the steps of jobs. */
function messagesByKind(batch: MessageBatch<IngestMessage>): { inserts: Message<InsertMessage>[]; jobs: Message<JobMessage>[] } {
  return {
    inserts: batch.messages.filter((message): message is Message<InsertMessage> => !isJobMessage(message.body)),
    jobs: batch.messages.filter((message): message is Message<JobMessage> => isJobMessage(message.body)),
  };
}

/**
 * The ingest queue's batches: insert items side by side with the steps of jobs (reindexes, tunings), each message
 * handed to its kind's handler (insert-item.ts, job-step.ts), which acknowledges it or has it tried again
 * (retry-policy.ts).
 */
export async function consumeIngestBatch(batch: MessageBatch<IngestMessage>, env: Env): Promise<void> {
  const { inserts, jobs } = messagesByKind(batch);
  const handleInsert = async (message: Message<InsertMessage>): Promise<Retiring> =>
    handleInsertMessage(env, message, 'images', await pendingItemOf(env, message.body));
  const [retiring] = await Promise.all([
    pMap(inserts, handleInsert, { concurrency: INSERT_ITEMS_IN_FLIGHT }),
    Promise.all(
      jobs.map((message) =>
        isReindexMessage(message.body)
          ? handleJobMessage(env, message as Message<ReindexMessage>, REINDEX_JOB)
          : isMoveMessage(message.body)
            ? handleJobMessage(env, message as Message<MoveMessage>, MOVE_JOB)
            : handleJobMessage(env, message as Message<TuningMessage>, TUNING_JOB),
      ),
    ),
  ]);
  await deleteRetiredOf(env, retiring);
}

type LoadedMessage = { message: Message<InsertMessage>; item: PendingItem | null };

/**
 * A batch's insert messages in runs, one run an image (its catalog database, application and name), each in the
 * order its items were accepted; a settled item's message (a redelivery) makes a run of its own.
 */
function runsByImage(loaded: LoadedMessage[]): LoadedMessage[][] {
  const runs = new Map<string, LoadedMessage[]>();
  for (const entry of loaded) {
    const key = entry.item ? JSON.stringify([entry.item.database, entry.item.appId, entry.item.imName]) : entry.message.id;
    const run = runs.get(key);
    if (run) run.push(entry);
    else runs.set(key, [entry]);
  }
  // A run of more than one holds pending items only, each with its seq.
  return [...runs.values()].map((run) => run.sort((a, b) => a.item!.seq - b.item!.seq));
}

/**
 * The update queue's batches: metadata-only updates, D1 and vector metadata only, never the inference service, so
 * that an update waits for no image being fetched and embedded, only for the earlier items of its own name
 * (insert-item.ts). Updates of one image in a batch go one after another in the order accepted: side by side, each
 * would find the one before still pending and wait DEFER_SECONDS (retry-policy.ts). Anything else found there goes
 * to the ingest queue, where it belongs.
 */
export async function consumeUpdateBatch(batch: MessageBatch<IngestMessage>, env: Env): Promise<void> {
  const { inserts, jobs } = messagesByKind(batch);
  const applyUpdates = async (): Promise<Retiring[]> => {
    const load = async (message: Message<InsertMessage>): Promise<LoadedMessage> => ({ message, item: await pendingItemOf(env, message.body) });
    const loaded = await Promise.all(inserts.map(load));
    const runs = await Promise.all(
      runsByImage(loaded).map(async (run) => {
        const apps: Retiring[] = [];
        for (const { message, item } of run) apps.push(await handleInsertMessage(env, message, 'updates', item));
        return apps;
      }),
    );
    return runs.flat();
  };
  const [retiring] = await Promise.all([
    applyUpdates(),
    Promise.all(
      jobs.map(async (message) => {
        await sendJobMessage(env.INSERT_QUEUE, message.body);
        message.ack();
      }),
    ),
  ]);
  await deleteRetiredOf(env, retiring);
}
