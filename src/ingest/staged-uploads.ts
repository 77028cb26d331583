/**
 * Images sent to `/insert` as files (`image[i]`, docs/api.md, POST /insert): checked from their bytes at once, kept in
 * R2 under a key of their own until their item settles, and read there by the consumer instead of a download. A
 * queue message carries no bytes (at most 128 KB): the key waits in D1 with the item.
 */
import type { Env } from '../env';
import { dataErrorEntry, type DataErrorEntry } from '../http/envelope';
import { DATA_ERRORS, GENERAL, type DataError } from '../http/messages';
import { hasSupportedDimensions, probeImage } from '../images/probe';
import { deleteBlobs, putImageBlob, stagedBlobKey } from '../storage/blobs';
import { forgetStagedKey, stagedKeysLeft, type InsertItem } from '../storage/transactions';
import { refuse, type InsertImages } from './insert-request';

/** As a failed item is settled: the image is refused, not accepted, when its bytes could not be kept. */
const NOT_STAGED: DataError = { code: 500, message: GENERAL.systemError };

/**
 * The uploaded files of accepted images, checked as a downloaded image is (format 202, dimensions 203: refused in the
 * answer) and staged: each accepted upload gets its `stagedKey`, and one that could not be stored is refused.
 */
export async function stageUploads(
  bucket: R2Bucket,
  appId: string,
  { uploads, ...images }: InsertImages & { uploads: Map<number, File> },
): Promise<InsertImages> {
  const refused: DataErrorEntry[] = [];
  const staged = new Map<number, string>();
  await Promise.all(
    images.accepted.map(async (item) => {
      const upload = uploads.get(item.index);
      if (!upload) return;
      const error = await stage(bucket, appId, item, upload, staged);
      if (error) refused.push(dataErrorEntry(error, { index: item.index, im_name: item.imName }));
    }),
  );
  const kept = refuse(images, refused);
  return { ...kept, accepted: kept.accepted.map((item) => (staged.has(item.index) ? { ...item, stagedKey: staged.get(item.index)! } : item)) };
}

async function stage(bucket: R2Bucket, appId: string, item: InsertItem, upload: File, staged: Map<number, string>): Promise<DataError | null> {
  const bytes = new Uint8Array(await upload.arrayBuffer());
  const info = probeImage(bytes);
  if (!info) return DATA_ERRORS.unsupportedFormat;
  if (!hasSupportedDimensions(info)) return DATA_ERRORS.unsupportedDimension;
  const key = stagedBlobKey(appId, crypto.randomUUID());
  try {
    await putImageBlob(bucket, key, bytes, info.format);
  } catch (error) {
    console.error(JSON.stringify({ event: 'insert_stage_failed', appId, index: item.index, error: String(error) }));
    return NOT_STAGED;
  }
  staged.set(item.index, key);
  return null;
}

/** Deletes the staged files of items never recorded or taken back (their transaction refused or rolled back). */
export async function discardStaged(bucket: R2Bucket, items: InsertItem[]): Promise<void> {
  try {
    await deleteBlobs(bucket, items.flatMap((item) => (item.stagedKey ? [item.stagedKey] : [])));
  } catch (error) {
    // Not recorded anywhere: an object left here is only storage, never an item.
    console.error(JSON.stringify({ event: 'staged_discard_failed', error: String(error) }));
  }
}

/**
 * Deletes a settled item's staged file, then forgets its key; if either fails, the cron sweeper deletes it later
 * (deleteSettledStaged), so settling never waits on it.
 */
export async function releaseStaged(env: Env, item: { transId: number; index: number; stagedKey?: string | null }): Promise<void> {
  if (!item.stagedKey) return;
  try {
    await deleteBlobs(env.BLOBS, [item.stagedKey]);
    await forgetStagedKey(env.DB, item.transId, item.index);
  } catch (error) {
    console.error(JSON.stringify({ event: 'staged_delete_failed', transId: item.transId, index: item.index, error: String(error) }));
  }
}

/** Staged files whose deletion failed, per sweeper run at most. */
const STAGED_PER_RUN = 100;

/** For the cron sweeper: the staged files of settled items that are still there. */
export async function deleteSettledStaged(env: Env): Promise<void> {
  for (const item of await stagedKeysLeft(env.DB, STAGED_PER_RUN)) await releaseStaged(env, item);
}
