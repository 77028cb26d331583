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
import { databaseNamed } from '../storage/databases';
import { forgetStagedKey, referencedStagedKeys, stagedKeysLeft, type InsertItem } from '../storage/transactions';
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
export async function releaseStaged(env: Env, item: { transId: number; index: number; stagedKey?: string | null; database: string }): Promise<void> {
  if (!item.stagedKey) return;
  try {
    await deleteBlobs(env.BLOBS, [item.stagedKey]);
    await forgetStagedKey(databaseNamed(env, item.database), item.transId, item.index);
  } catch (error) {
    console.error(JSON.stringify({ event: 'staged_delete_failed', transId: item.transId, index: item.index, error: String(error) }));
  }
}

/** Staged files whose deletion failed, per sweeper run at most. */
const STAGED_PER_RUN = 100;

/** For the cron sweeper: the staged files of settled items of `database` that are still there. */
export async function deleteSettledStaged(env: Env, database: string): Promise<void> {
  for (const item of await stagedKeysLeft(databaseNamed(env, database), STAGED_PER_RUN)) await releaseStaged(env, { ...item, database });
}

/** Applications whose staged folder one sweeper run looks through; the next run takes the next ones. */
const APPS_PER_RUN = 20;
/** A staged file no item names is deleted once it is this old: a Worker that stages a file records it within seconds. */
const ORPHAN_AFTER_MS = 24 * 3_600_000;
const CURSOR = 'orphaned-staged';

/**
 * For the cron sweeper: files under `<app>/staged/` that no item names (a Worker died between staging a file and
 * recording its item), older than a day, deleted; APPS_PER_RUN applications a run, the first page of each, round the
 * applications from where the last run stopped. The number deleted.
 */
export async function deleteOrphanedStaged(env: Env, now: Date): Promise<number> {
  const after = (await env.DB.prepare('SELECT value FROM sweep_cursors WHERE name = ?').bind(CURSOR).first<{ value: string }>())?.value ?? '';
  const { results } = await env.DB.prepare('SELECT id, database FROM apps WHERE id > ? ORDER BY id LIMIT ?').bind(after, APPS_PER_RUN).all<{ id: string; database: string }>();
  let deleted = 0;
  for (const { id, database } of results) {
    const listed = await env.BLOBS.list({ prefix: stagedBlobKey(id, '') });
    const old = listed.objects.filter((object) => now.getTime() - object.uploaded.getTime() > ORPHAN_AFTER_MS).map((object) => object.key);
    const named = await referencedStagedKeys(databaseNamed(env, database), old);
    const orphans = old.filter((key) => !named.has(key));
    await deleteBlobs(env.BLOBS, orphans);
    deleted += orphans.length;
  }
  // Past the last application, the next run starts again from the first.
  const next = results.length < APPS_PER_RUN ? '' : results.at(-1)!.id;
  await env.DB.prepare('INSERT INTO sweep_cursors (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = ?2').bind(CURSOR, next).run();
  return deleted;
}
