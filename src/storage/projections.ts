import { decodeProjection, decodeStatistics, encodeProjection, encodeStatistics, type FitStatistics, type Projection } from '../tuning/projection';

/**
 * Where a tuning keeps what it fits (R2, under the application's prefix and the tuning's version, so that every
 * isolate reads the same and a new version never overwrites an old one): the statistics its fitting steps add to,
 * and the projection its application's vectors are mapped by (docs/decisions.md, "Tuning on a label field").
 */
const tuningPrefix = (appId: string, version: number): string => `${appId}/tunings/${version}/`;
/** The statistics as they stand once the images up to `cursor` are added (a step tried again adds its batch once). */
const statisticsKey = (appId: string, version: number, cursor: number): string => `${tuningPrefix(appId, version)}statistics/${cursor}`;
const projectionKey = (appId: string, version: number): string => `${tuningPrefix(appId, version)}projection`;

export async function readStatistics(bucket: R2Bucket, appId: string, version: number, cursor: number): Promise<FitStatistics | null> {
  const stored = await bucket.get(statisticsKey(appId, version, cursor));
  return stored ? decodeStatistics(new Uint8Array(await stored.arrayBuffer())) : null;
}

export async function writeStatistics(bucket: R2Bucket, appId: string, version: number, cursor: number, statistics: FitStatistics): Promise<void> {
  await bucket.put(statisticsKey(appId, version, cursor), encodeStatistics(statistics));
}

/** Deletes the statistics kept up to `cursor` (once the tuning moved past it), or all of them (once it is fitted). */
export async function deleteStatistics(bucket: R2Bucket, appId: string, version: number, cursor?: number): Promise<void> {
  if (cursor !== undefined) return bucket.delete(statisticsKey(appId, version, cursor));
  await deleteUnder(bucket, `${tuningPrefix(appId, version)}statistics/`);
}

async function deleteUnder(bucket: R2Bucket, prefix: string): Promise<void> {
  for (let cursor: string | undefined, more = true; more; ) {
    const listed = await bucket.list({ prefix, ...(cursor && { cursor }) });
    if (listed.objects.length > 0) await bucket.delete(listed.objects.map((object) => object.key));
    more = listed.truncated;
    cursor = listed.truncated ? listed.cursor : undefined;
  }
}

export async function writeProjection(bucket: R2Bucket, appId: string, version: number, projection: Projection): Promise<void> {
  await bucket.put(projectionKey(appId, version), encodeProjection(projection));
}

/** What an isolate keeps of projections (a 1536-d one is 9 MiB): the least recently used go first past this. */
const CACHED_PROJECTION_BYTES = 24 * 1024 * 1024;
const cached = new Map<string, Projection>();

/** A tuning's projection, read once per isolate (it never changes under its key); a missing one throws. */
export async function readProjection(bucket: R2Bucket, appId: string, version: number): Promise<Projection> {
  const key = projectionKey(appId, version);
  const hit = cached.get(key);
  if (hit) {
    cached.delete(key);
    cached.set(key, hit);
    return hit;
  }
  const stored = await bucket.get(key);
  if (!stored) throw new Error(`The projection of tuning ${version} of ${appId} is missing.`);
  const projection = decodeProjection(new Uint8Array(await stored.arrayBuffer()));
  cached.set(key, projection);
  let bytes = 0;
  for (const value of cached.values()) bytes += value.matrix.byteLength;
  for (const [oldest, value] of cached) {
    if (bytes <= CACHED_PROJECTION_BYTES || oldest === key) break;
    cached.delete(oldest);
    bytes -= value.matrix.byteLength;
  }
  return projection;
}

/** Deletes what a tuning kept, once its application no longer uses it. */
export async function deleteTuningBlobs(bucket: R2Bucket, appId: string, version: number): Promise<void> {
  await deleteUnder(bucket, tuningPrefix(appId, version));
}
