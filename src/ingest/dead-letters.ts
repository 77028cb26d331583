import type { Env } from '../env';
import { GENERAL } from '../http/messages';
import { MAX_DETECTED_OBJECTS } from '../ports/inference/types';
import { imageBlobKey } from '../storage/blobs';
import { databaseNamed } from '../storage/databases';
import { retireUnlessLive } from '../storage/retired';
import { getPendingItem, isMetadataUpdate, settleItem, type ItemOutcome } from '../storage/transactions';
import { isJobMessage, messageDatabase, type IngestMessage } from './message';
import { releaseStaged } from './staged-uploads';

/** How an item ends when retrying gave up on it (failForGood, for the dead-letter consumer and the sweeper). */
const FAILED_BY_SYSTEM: ItemOutcome = { state: 'failed', code: 500, message: GENERAL.systemError };

/**
 * Gives an item up, once: settled as a system error, the version it may have begun to write (bytes, vectors)
 * retired and its staged file deleted, so nothing it left stays behind. The dead-letter consumer and the sweeper end
 * items this way.
 */
export async function failForGood(env: Env, database: string, transId: number, index: number): Promise<void> {
  const item = await getPendingItem(env, database, transId, index);
  if (!item) return;
  const db = databaseNamed(env, database);
  if (!isMetadataUpdate(item)) {
    const blobKey = imageBlobKey(item.appId, item.imName, item.seq);
    // However many objects it found, its object vectors are among the first MAX_DETECTED_OBJECTS ids.
    await retireUnlessLive(db, { id: item.seq, appId: item.appId, blobKey, objectCount: MAX_DETECTED_OBJECTS }).run();
  }
  await settleItem(db, transId, index, FAILED_BY_SYSTEM);
  await releaseStaged(env, item);
}

/**
 * Messages a consumer could not process within its retries (inference down, storage failing, or the consumer
 * throwing or dying itself), of either queue (queue-names.ts): the item is failed with the system error, so that its
 * transaction still reaches 100. An item settled meanwhile stays as it is.
 */
export async function consumeDeadLetters(batch: MessageBatch<IngestMessage>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    if (isJobMessage(message.body)) {
      // Nothing is lost with a job's step: its progress is in D1, and the sweeper resumes it (sweeper.ts).
      console.error(JSON.stringify({ event: 'job_dead_letter', job: message.body, attempts: message.attempts }));
      message.ack();
      continue;
    }
    const { transId, index } = message.body;
    const database = messageDatabase(message.body);
    console.error(JSON.stringify({ event: 'insert_dead_letter', transId, index, database, attempts: message.attempts }));
    await failForGood(env, database, transId, index);
    message.ack();
  }
}
