import { DownloadError, downloadImage, downloadOptions } from '../download/download';
import type { Env } from '../env';
import { DATA_ERRORS, type DataError } from '../http/messages';
import { hasSupportedDimensions, probeImage, type ImageInfo } from '../images/probe';
import { inference } from '../ports/inference';
import { InferenceBusyError, UndecodableImageError, type Prediction } from '../ports/inference/types';
import { imageBlobKey, putImageBlob } from '../storage/blobs';
import { applyVersion, mergeImageMetadata } from '../storage/images';
import { deleteRetiredSoon } from '../storage/retired';
import { vectorsRewritten } from '../storage/stale-vectors';
import { getPendingItem, hasEarlierPendingItem, markStarted, settleItem, settleStatements, type ItemOutcome, type PendingItem } from '../storage/transactions';
import { getSchema } from '../storage/apps';
import { embedModelsToWrite, noteReindexError } from '../storage/reindexes';
import { replaceVectorMetadata, vectorMetadata, writeImageVectors, type ModelEmbedding } from '../storage/vectors';
import { continueReindex, embeddingMismatch } from './reindex';
import { isReindexMessage, sendInsertMessages, sendReindexMessage, type IngestMessage, type InsertMessage, type ReindexMessage } from './message';

/** Bytes an inserted image may have: a 40 MP image compresses well below this. */
export const MAX_IMAGE_BYTES = 50 * 1024 * 1024;

/** A failure that retrying cannot mend: the item is settled as failed with this spec error. */
class ItemRejected extends Error {
  readonly error: DataError;
  constructor(error: DataError) {
    super(error.message);
    this.error = error;
  }
}

/** Not yet: the item is sent again after DEFER_SECONDS, without counting as a failure. */
class ItemDeferred extends Error {}
const DEFER_SECONDS = 5;
/** The longest wait between tries of an item the inference service keeps refusing as busy. */
const MAX_BUSY_DELAY_SECONDS = 60;

/**
 * Downloads and checks an item's image and predicts what the index needs of it: objects and colours, and an
 * embedding by each of `models` (the application's, and the one a reindex moves it to), each with the same objects.
 */
async function fetchAndPredict(
  env: Env,
  item: PendingItem & { imUrl: string },
): Promise<{ bytes: Uint8Array; info: ImageInfo; prediction: Prediction; embeddings: ModelEmbedding[] }> {
  const download = async (): Promise<Uint8Array> => {
    try {
      return await downloadImage(item.imUrl, downloadOptions(env, MAX_IMAGE_BYTES));
    } catch (error) {
      if (error instanceof DownloadError) throw new ItemRejected(DATA_ERRORS.downloadFailed);
      throw error;
    }
  };
  // Read while the image downloads; read after the item was accepted, so a reindex begun before is seen.
  const [bytes, models] = await Promise.all([download(), embedModelsToWrite(env.DB, item.appId)]);
  const info = probeImage(bytes);
  if (!info) throw new ItemRejected(DATA_ERRORS.unsupportedFormat);
  if (!hasSupportedDimensions(info)) throw new ItemRejected(DATA_ERRORS.unsupportedDimension);
  try {
    const [model, ...others] = models;
    const [prediction, ...alsoIn] = await Promise.all([
      inference(env).predict(bytes, ['embed', 'detect', 'colors'], { priority: 'bulk', embedModel: model }),
      ...others.map((embedModel) => inference(env).predict(bytes, ['embed', 'detect'], { priority: 'bulk', embedModel })),
    ]);
    const objectCount = prediction.detect.objects.length;
    const embeddings = [prediction, ...alsoIn].map(({ embed, detect }, k) => {
      const mismatch = embeddingMismatch(env, models[k]!, embed);
      if (mismatch) throw new Error(mismatch);
      return { model: models[k]!, vector: embed.vector, objects: detect.objects.slice(0, objectCount) };
    });
    return { bytes, info, prediction, embeddings };
  } catch (error) {
    if (error instanceof UndecodableImageError) throw new ItemRejected(DATA_ERRORS.unsupportedFormat);
    throw error;
  }
}

/**
 * Download, check, store, embed, detect, measure colours and index one image as a new version under the item's
 * `seq`: bytes and vectors first, then one D1 batch that makes the version the image's and settles the item
 * (storage/images.ts). A failure before that batch leaves the previous version as it was, fully searchable; what the
 * new version wrote is retired if it never applies.
 */
async function ingest(env: Env, item: PendingItem & { imUrl: string }): Promise<void> {
  // The schema is read while the image is fetched and predicted: neither waits for the other.
  const [schema, { bytes, info, prediction, embeddings }] = await Promise.all([getSchema(env.DB, item.appId), fetchAndPredict(env, item)]);
  const blobKey = imageBlobKey(item.appId, item.imName, item.seq);
  const objects = prediction.detect.objects;
  const metadata = vectorMetadata(item.metadata, schema);
  await Promise.all([
    putImageBlob(env.BLOBS, blobKey, bytes, info.format),
    writeImageVectors(env, { id: item.seq, appId: item.appId, metadata }, embeddings, prediction.colors.palette, objects),
  ]);
  await applyVersion(
    env.DB,
    {
      id: item.seq,
      appId: item.appId,
      imName: item.imName,
      imUrl: item.imUrl,
      blobKey,
      format: info.format,
      width: info.width,
      height: info.height,
      metadata: item.metadata,
      objectCount: objects.length,
      colors: prediction.colors.palette,
      embedModel: embeddings.at(-1)!.model,
    },
    // A version that lost to a later operation on the name is still done: the item was processed, the later one won.
    settleStatements(env.DB, item.transId, item.index, { state: 'done' }),
  );
}

/**
 * A metadata-only update: D1 and the vectors' metadata change; the image, its embedding and colours stay. It
 * changes nothing over a version that came after it (it waits for earlier items of its name: see handle). Settled
 * with its record of stale vectors (storage/stale-vectors.ts) gone, once the vectors are rewritten.
 */
async function updateMetadata(env: Env, item: PendingItem): Promise<void> {
  const attempt = crypto.randomUUID();
  const merged = await mergeImageMetadata(env.DB, item, attempt);
  if (merged.kind === 'merged') {
    // Read after the merge, which holds a reindex's retire pass back: an old model emptied since is not written again.
    const [schema, models] = await Promise.all([getSchema(env.DB, item.appId), embedModelsToWrite(env.DB, item.appId)]);
    await replaceVectorMetadata(env, merged.image, vectorMetadata(merged.image.metadata, schema), models);
  }
  // Removed since the update was accepted: there is nothing left to update.
  const { code, message } = DATA_ERRORS.imageNotFound;
  const outcome: ItemOutcome = merged.kind === 'missing' ? { state: 'failed', code, message } : { state: 'done' };
  await env.DB.batch([...settleStatements(env.DB, item.transId, item.index, outcome), vectorsRewritten(env.DB, attempt)]);
}

/**
 * How long an item waits before its next try when it must wait rather than fail: a metadata update behind an
 * earlier insert, or an insert the inference service refused as busy (searches go first), backing off while the
 * service stays busy. `busy` counts those refusals.
 */
function waitBeforeNextTry(error: unknown, busy: number): { delaySeconds: number; busy: number } | undefined {
  if (error instanceof ItemDeferred) return { delaySeconds: DEFER_SECONDS, busy };
  if (error instanceof InferenceBusyError) {
    return { delaySeconds: Math.min(MAX_BUSY_DELAY_SECONDS, error.retryAfterSeconds * 2 ** busy), busy: busy + 1 };
  }
  return undefined;
}

/**
 * Handles one message; answers the application whose retired versions may wait to be deleted: one replaced by an
 * image it made live, or one whose deletion an update held back while it rewrote its vectors.
 */
async function handle(env: Env, message: Message<InsertMessage>): Promise<string | undefined> {
  const { transId, index } = message.body;
  const item = await getPendingItem(env.DB, transId, index);
  if (!item) {
    message.ack(); // already settled: a redelivery
    return undefined;
  }
  try {
    // Checked before the item counts as started: a waiting update must not look like work under way to the sweeper,
    // or an earlier item whose message was lost would never be sent again, and the update would wait forever.
    if (item.imUrl === null && (await hasEarlierPendingItem(env.DB, item.appId, item.imName, item.seq))) throw new ItemDeferred();
    if (item.imUrl === null) {
      await markStarted(env.DB, transId, index);
      await updateMetadata(env, item);
    } else {
      // Marked while the image is fetched: the mark only has to land before the message is acknowledged.
      await Promise.all([markStarted(env.DB, transId, index), ingest(env, { ...item, imUrl: item.imUrl })]);
    }
    message.ack();
  } catch (error) {
    const wait = waitBeforeNextTry(error, message.body.busy ?? 0);
    if (wait) {
      // Waiting is not failing: a new message, so that the wait spends none of this one's deliveries.
      await sendInsertMessages(env.INSERT_QUEUE, [{ transId, index, busy: wait.busy }], { delaySeconds: wait.delaySeconds });
      message.ack();
      return undefined;
    }
    if (error instanceof ItemRejected) {
      await settleItem(env.DB, transId, index, { state: 'failed', code: error.error.code, message: error.error.message });
      message.ack();
      return undefined;
    }
    console.error(JSON.stringify({ event: 'insert_item_error', transId, index, attempt: message.attempts, error: String(error) }));
    // Transient (inference down, storage hiccup): back off and let the queue deliver it again; past the consumer's
    // max_retries the queue hands it to the dead-letter queue, which fails the item (dead-letters.ts).
    message.retry({ delaySeconds: Math.min(2 ** message.attempts, 60) });
    return undefined;
  }
  return item.appId;
}

/** Runs one step of a reindex and sends the next; busy and transient failures are retried as an insert's are. */
async function handleReindex(env: Env, message: Message<ReindexMessage>): Promise<void> {
  const { reindex: appId, step } = message.body;
  try {
    const after = await continueReindex(env, appId, step);
    if (after.next !== 'ended') {
      await sendReindexMessage(env.INSERT_QUEUE, { reindex: appId, step: after.step }, after.next === 'wait' ? { delaySeconds: DEFER_SECONDS } : {});
    }
    message.ack();
  } catch (error) {
    const wait = waitBeforeNextTry(error, message.body.busy ?? 0);
    if (wait) {
      await sendReindexMessage(env.INSERT_QUEUE, { reindex: appId, step, busy: wait.busy }, { delaySeconds: wait.delaySeconds });
      message.ack();
      return;
    }
    console.error(JSON.stringify({ event: 'reindex_step_error', appId, step, attempt: message.attempts, error: String(error) }));
    await noteReindexError(env.DB, appId, String(error)).catch(() => undefined);
    // Past max_retries the dead-letter consumer drops it; the sweeper resumes the stalled reindex (sweeper.ts).
    message.retry({ delaySeconds: Math.min(2 ** message.attempts, 60) });
  }
}

/** The ingest queue's batches: insert items side by side with a reindex's steps. */
export async function consumeIngestBatch(batch: MessageBatch<IngestMessage>, env: Env): Promise<void> {
  const inserts = batch.messages.filter((message): message is Message<InsertMessage> => !isReindexMessage(message.body));
  const reindexes = batch.messages.filter((message): message is Message<ReindexMessage> => isReindexMessage(message.body));
  const [retiring] = await Promise.all([
    Promise.all(inserts.map((message) => handle(env, message))),
    Promise.all(reindexes.map((message) => handleReindex(env, message))),
  ]);
  // Once per application of the batch, not once per image: each call reads and deletes the same backlog.
  const apps = new Set(retiring.filter((appId) => appId !== undefined));
  await Promise.all([...apps].map((appId) => deleteRetiredSoon(env, appId)));
}
