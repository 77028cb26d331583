import type { Env } from '../env';
import { DATA_ERRORS, type DataError } from '../http/messages';
import { hasSupportedDimensions, probeImage } from '../images/probe';
import { inference } from '../ports/inference';
import { UndecodableImageError, type Prediction } from '../ports/inference/types';
import { imageBlobKey, putImageBlob } from '../storage/blobs';
import { mergeImageMetadata, upsertImage } from '../storage/images';
import { getPendingItem, settleItem, type PendingItem } from '../storage/transactions';
import { getSchema } from '../storage/apps';
import { replaceVectorMetadata, vectorMetadata, writeImageVectors } from '../storage/vectors';
import { DownloadError, downloadImage, downloadOptions } from './download';
import type { InsertMessage } from './message';

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

/** Download, check, store, embed, detect, measure colours and index one image; the item is marked done only once it is searchable. */
async function ingest(env: Env, item: PendingItem & { imUrl: string }): Promise<void> {
  let bytes: Uint8Array;
  try {
    bytes = await downloadImage(item.imUrl, downloadOptions(env, MAX_IMAGE_BYTES));
  } catch (error) {
    if (error instanceof DownloadError) throw new ItemRejected(DATA_ERRORS.downloadFailed);
    throw error;
  }
  const info = probeImage(bytes);
  if (!info) throw new ItemRejected(DATA_ERRORS.unsupportedFormat);
  if (!hasSupportedDimensions(info)) throw new ItemRejected(DATA_ERRORS.unsupportedDimension);

  let prediction: Prediction;
  try {
    prediction = await inference(env).predict(bytes, ['embed', 'detect', 'colors']);
  } catch (error) {
    if (error instanceof UndecodableImageError) throw new ItemRejected(DATA_ERRORS.unsupportedFormat);
    throw error;
  }

  const blobKey = imageBlobKey(item.appId, item.imName);
  await putImageBlob(env.BLOBS, blobKey, bytes, info.format);
  const objects = prediction.detect!.objects;
  const image = await upsertImage(env.DB, {
    appId: item.appId,
    imName: item.imName,
    imUrl: item.imUrl,
    blobKey,
    format: info.format,
    width: info.width,
    height: info.height,
    metadata: item.metadata,
    objectCount: objects.length,
    colors: prediction.colors!.palette,
  });
  const metadata = vectorMetadata(item.metadata, await getSchema(env.DB, item.appId));
  await writeImageVectors(env, { ...image, appId: item.appId, metadata }, prediction.embed!.vector, prediction.colors!.palette, objects);
  await settleItem(env.DB, item.transId, item.index, { state: 'done' });
}

/** A metadata-only update: D1 and the vectors' metadata change; the image, its embedding and colours stay. */
async function updateMetadata(env: Env, item: PendingItem): Promise<void> {
  const image = await mergeImageMetadata(env.DB, item.appId, item.imName, item.metadata);
  // Removed since the insert was accepted: there is nothing left to update.
  if (!image) throw new ItemRejected(DATA_ERRORS.imageNotFound);
  await replaceVectorMetadata(env, image, vectorMetadata(image.metadata, await getSchema(env.DB, item.appId)));
  await settleItem(env.DB, item.transId, item.index, { state: 'done' });
}

async function handle(env: Env, message: Message<InsertMessage>): Promise<void> {
  const { transId, index } = message.body;
  const item = await getPendingItem(env.DB, transId, index);
  if (!item) {
    message.ack(); // already settled: a redelivery
    return;
  }
  try {
    if (item.imUrl === null) await updateMetadata(env, item);
    else await ingest(env, { ...item, imUrl: item.imUrl });
    message.ack();
  } catch (error) {
    if (error instanceof ItemRejected) {
      await settleItem(env.DB, transId, index, { state: 'failed', code: error.error.code, message: error.error.message });
      message.ack();
      return;
    }
    console.error(JSON.stringify({ event: 'insert_item_error', transId, index, attempt: message.attempts, error: String(error) }));
    // Transient (inference down, storage hiccup): back off and let the queue deliver it again; past the consumer's
    // max_retries the queue hands it to the dead-letter queue, which fails the item (dead-letters.ts).
    message.retry({ delaySeconds: Math.min(2 ** message.attempts, 60) });
  }
}

export async function consumeInsertBatch(batch: MessageBatch<InsertMessage>, env: Env): Promise<void> {
  await Promise.all(batch.messages.map((message) => handle(env, message)));
}
