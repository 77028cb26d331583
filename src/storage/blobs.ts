/** R2 keys: every object lives under its application's prefix; each version of an image under its own id. */
export const imageBlobKey = (appId: string, imName: string, versionId: number): string => `${appId}/images/${imName}/${versionId}`;
/** A query image of an upload search, under its `im_id` (query-images.ts). */
export const queryBlobKey = (appId: string, imId: string): string => `${appId}/queries/${imId}`;

/** An image sent as a file to `/insert`, kept until its item settles (ingest/staged-uploads.ts). */
export const stagedBlobKey = (appId: string, uploadId: string): string => `${appId}/staged/${uploadId}`;

/** The one writer of image bytes: collection images and query images alike. */
export async function putImageBlob(bucket: R2Bucket, key: string, bytes: Uint8Array, format: string): Promise<void> {
  await bucket.put(key, bytes, { httpMetadata: { contentType: `image/${format}` } });
}

export async function deleteBlobs(bucket: R2Bucket, keys: string[]): Promise<void> {
  if (keys.length > 0) await bucket.delete(keys);
}
