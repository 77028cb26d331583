/**
 * An insert item, from its queue message to its settled outcome: a new version of an image (download or staged file,
 * probe, inference, R2, vectors, then one D1 batch), or a metadata-only update.
 */
import { DownloadError, downloadImage, downloadOptions } from '../download/download';
import type { Env } from '../env';
import { DATA_ERRORS, type DataError } from '../http/messages';
import { hasSupportedDimensions, probeImage, type ImageInfo } from '../images/probe';
import { inference } from '../ports/inference';
import { UndecodableImageError, type Prediction } from '../ports/inference/types';
import { imageBlobKey, putImageBlob } from '../storage/blobs';
import { catalogDatabase, databaseNamed } from '../storage/databases';
import { applyVersion, mergeImageMetadata } from '../storage/images';
import { vectorsRewritten } from '../storage/stale-vectors';
import {
  getPendingItem,
  hasEarlierPendingItem,
  itemKind,
  markStarted,
  settleItem,
  settleStatements,
  type ItemOutcome,
  type PendingItem,
} from '../storage/transactions';
import { getApp, getSchema } from '../storage/apps';
import { readProjection } from '../storage/projections';
import { writeTargets } from '../storage/reindexes';
import { projectEmbedding } from '../tuning/project-embedding';
import { replaceVectorMetadata, vectorMetadata, writeImageVectors, type ModelEmbedding } from '../storage/vectors';
import { embeddingMismatch } from './embedding-mismatch';
import { messageDatabase, sendInsertMessages, type InsertMessage } from './message';
import { Deferred, tryAgainLater } from './retry-policy';
import { releaseStaged } from './staged-uploads';

/** Bytes an inserted image may have: a 40 MP image compresses well below this. */
export const MAX_IMAGE_BYTES = 50 * 1024 * 1024;

/** The item's application as the storage functions name it: its id and catalog database. */
const appOf = (item: PendingItem): { id: string; database: string } => ({ id: item.appId, database: item.database });

/** A failure that retrying cannot mend: the item is settled as failed with this spec error. */
class ItemRejected extends Error {
  readonly error: DataError;
  constructor(error: DataError) {
    super(error.message);
    this.error = error;
  }
}

/** The image's bytes: downloaded from its URL, or its file as /insert staged it (staged-uploads.ts). */
async function imageBytes(env: Env, item: PendingItem): Promise<Uint8Array> {
  if (item.stagedKey) {
    const staged = await env.BLOBS.get(item.stagedKey);
    // Deleted only once the item settled: missing, it is a storage failure, retried like one.
    if (!staged) throw new Error(`staged image ${item.stagedKey} is missing`);
    return new Uint8Array(await staged.arrayBuffer());
  }
  try {
    return await downloadImage(item.imUrl!, downloadOptions(env, MAX_IMAGE_BYTES));
  } catch (error) {
    if (error instanceof DownloadError) throw new ItemRejected(DATA_ERRORS.downloadFailed);
    throw error;
  }
}

/**
 * Fetches and checks an item's image and predicts what the index needs of it: objects and colours, and an
 * embedding by each of `models` (the application's, and the one a reindex moves it to), each with the same objects.
 */
async function fetchAndPredict(
  env: Env,
  item: PendingItem,
): Promise<{ bytes: Uint8Array; info: ImageInfo; prediction: Prediction; embeddings: ModelEmbedding[] }> {
  // Read while the image downloads; read after the item was accepted, so a reindex begun before is seen.
  const [bytes, { models, vocabulary, tuning }] = await Promise.all([imageBytes(env, item), writeTargets(env, appOf(item))]);
  const info = probeImage(bytes);
  if (!info) throw new ItemRejected(DATA_ERRORS.unsupportedFormat);
  if (!hasSupportedDimensions(info)) throw new ItemRejected(DATA_ERRORS.unsupportedDimension);
  try {
    const [model, ...others] = models;
    const [prediction, ...alsoIn] = await Promise.all([
      inference(env).predict(bytes, ['embed', 'detect', 'colors'], { priority: 'bulk', embedModel: model, vocabulary }),
      ...others.map((embedModel) => inference(env).predict(bytes, ['embed', 'detect'], { priority: 'bulk', embedModel, vocabulary })),
    ]);
    const objectCount = prediction.detect.objects.length;
    const embeddings = [prediction, ...alsoIn].map(({ embed, detect }, k) => {
      const mismatch = embeddingMismatch(env, models[k]!, embed);
      if (mismatch) throw new Error(mismatch);
      return { model: models[k]!, vector: embed.vector, objects: detect.objects.slice(0, objectCount) };
    });
    // A tuning applied or being made has the version's vectors projected too (no reindex runs meanwhile: one model).
    if (tuning !== null) embeddings.push(projectEmbedding(await readProjection(env.BLOBS, item.appId, tuning), embeddings[0]!));
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
async function ingest(env: Env, item: PendingItem): Promise<void> {
  const db = catalogDatabase(env, item);
  // The schema is read while the image is fetched and predicted: neither waits for the other.
  const [schema, { bytes, info, prediction, embeddings }] = await Promise.all([getSchema(env, appOf(item)), fetchAndPredict(env, item)]);
  const blobKey = imageBlobKey(item.appId, item.imName, item.seq);
  const objects = prediction.detect.objects;
  const metadata = vectorMetadata(item.metadata, schema);
  await Promise.all([
    putImageBlob(env.BLOBS, blobKey, bytes, info.format),
    writeImageVectors(env, { id: item.seq, appId: item.appId, metadata }, embeddings, prediction.colors.palette, objects),
  ]);
  await applyVersion(
    db,
    {
      id: item.seq,
      appId: item.appId,
      imName: item.imName,
      // An image sent as a file has no URL.
      imUrl: item.imUrl ?? '',
      blobKey,
      format: info.format,
      width: info.width,
      height: info.height,
      metadata: item.metadata,
      objectCount: objects.length,
      colors: prediction.colors.palette,
      embedModel: embeddings.findLast((embedding) => !embedding.tuned)!.model,
    },
    item,
    // A version that lost to a later insert of the name is still done: the item was processed, the later one won. One
    // a remove overtook was failed by it (storage/transactions.ts, cancelPendingItems): this settles nothing then.
    settleStatements(db, item.transId, item.index, { state: 'done' }),
  );
}

/**
 * A metadata-only update: D1 and the vectors' metadata change; the image, its embedding and colours stay. It
 * changes nothing over a version that came after it (it waits for earlier items of its name: see handleInsertMessage). Settled
 * with its record of stale vectors (storage/stale-vectors.ts) gone, once the vectors are rewritten.
 */
async function updateMetadata(env: Env, item: PendingItem): Promise<void> {
  const attempt = crypto.randomUUID();
  const db = catalogDatabase(env, item);
  const merged = await mergeImageMetadata(db, item, attempt);
  if (merged.kind === 'merged') {
    // Read after the merge, which holds a reindex's retire pass back: an old model emptied since is not written again.
    const [schema, { models }] = await Promise.all([getSchema(env, appOf(item)), writeTargets(env, appOf(item))]);
    await replaceVectorMetadata(env, merged.image, vectorMetadata(merged.image.metadata, schema), models);
  }
  // Not in the collection: the insert it waited for failed (a remove since its acceptance failed it already, with 111).
  const { code, message } = DATA_ERRORS.imageNotFound;
  const outcome: ItemOutcome = merged.kind === 'missing' ? { state: 'failed', code, message } : { state: 'done' };
  await db.batch([...settleStatements(db, item.transId, item.index, outcome), vectorsRewritten(db, attempt)]);
}

/** The item an insert message names, while it waits to be processed; null once settled (a redelivered message). */
export const pendingItemOf = (env: Env, message: InsertMessage): Promise<PendingItem | null> =>
  getPendingItem(env, messageDatabase(message), message.transId, message.index);

/**
 * An insert item's message with its item as pendingItemOf read it, from the ingest queue (`from: 'images'`: an
 * image, or an update sent there before updates had their own queue) or the update queue (`from: 'updates'`);
 * answers the application whose retired versions may wait to be deleted: one replaced by an image it made live, or
 * one whose deletion an update held back while it rewrote its vectors. The update queue's consumer never calls the
 * inference service: an image item found there is sent to the ingest queue.
 */
export async function handleInsertMessage(
  env: Env,
  message: Message<InsertMessage>,
  from: 'images' | 'updates',
  item: PendingItem | null,
): Promise<{ id: string; database: string } | undefined> {
  if (!item) {
    message.ack(); // already settled: a redelivery
    return undefined;
  }
  const { transId, index, database } = item;
  const db = databaseNamed(env, database);
  const kind = itemKind(item);
  try {
    if (from === 'updates' && kind === 'image') {
      await sendInsertMessages(env, [{ transId, index, database, kind }]);
      message.ack();
      return undefined;
    }
    if (item.movingOut) {
      // Its application is moving to another database (ingest/move.ts): the item waits until it has, then is that
      // database's copy of it, which it is sent to.
      const app = await getApp(env.DB, item.appId);
      if (!app || app.database === database) throw new Deferred();
      await sendInsertMessages(env, [{ transId, index, database: app.database, kind }]);
      message.ack();
      return undefined;
    }
    // Checked before the item counts as started: a waiting update must not look like work under way to the sweeper,
    // or an earlier item whose message was lost would never be sent again, and the update would wait forever.
    if (kind === 'metadata' && (await hasEarlierPendingItem(db, item.appId, item.imName, item.seq))) throw new Deferred();
    if (kind === 'metadata') {
      await markStarted(db, transId, index);
      await updateMetadata(env, item);
    } else {
      // Marked while the image is fetched: the mark only has to land before the message is acknowledged.
      await Promise.all([markStarted(db, transId, index), ingest(env, item)]);
    }
    await releaseStaged(env, item);
    message.ack();
  } catch (error) {
    if (error instanceof ItemRejected) {
      await settleItem(db, transId, index, { state: 'failed', code: error.error.code, message: error.error.message });
      await releaseStaged(env, item);
      message.ack();
      return undefined;
    }
    // Waiting, it goes to its kind's queue (an update never back to the images'); past max_retries the dead-letter
    // consumer fails the item (dead-letters.ts).
    await tryAgainLater(message, error, (body, options) => sendInsertMessages(env, [{ ...body, kind }], options), () => {
      console.error(JSON.stringify({ event: 'insert_item_error', transId, index, attempt: message.attempts, error: String(error) }));
    });
    return undefined;
  }
  return appOf(item);
}
