import type { Env } from '../env';
import type { DetectedObject } from '../ports/inference/types';
import { vectorIndex } from '../ports/vector-index';
import type { VectorIndex } from '../ports/vector-index/types';

/**
 * How the catalog lives in the vector indexes. Each image has one whole-image vector in the image index (id: the
 * image's D1 id) and one vector per detected object in the object index (id `<image id>.<k>`, metadata `type`),
 * all in the application's namespace.
 */
export const IMAGE_INDEX = 'images';
export const OBJECT_INDEX = 'objects';

export const imageVectors = (env: Env): VectorIndex => vectorIndex(env, IMAGE_INDEX);
export const objectVectors = (env: Env): VectorIndex => vectorIndex(env, OBJECT_INDEX);

const objectVectorIds = (imageId: number, from: number, to: number): string[] =>
  Array.from({ length: Math.max(0, to - from) }, (_, k) => `${imageId}.${from + k}`);

/** The image id of a vector of either index. */
export const imageIdOfVector = (vectorId: string): number => Number.parseInt(vectorId, 10);

/**
 * Writes an image's vectors, replacing what an earlier version of it left: the whole-image vector and objects
 * `0..n-1` are overwritten, objects past the new count deleted.
 */
export async function writeImageVectors(
  env: Env,
  image: { id: number; appId: string; previousObjectCount: number },
  vector: number[],
  objects: DetectedObject[],
): Promise<void> {
  await imageVectors(env).upsert([{ id: String(image.id), namespace: image.appId, values: vector }]);
  if (objects.length > 0) {
    await objectVectors(env).upsert(
      objects.map((object, k) => ({ id: `${image.id}.${k}`, namespace: image.appId, values: object.embedding, metadata: { type: object.type } })),
    );
  }
  const stale = objectVectorIds(image.id, objects.length, image.previousObjectCount);
  if (stale.length > 0) await objectVectors(env).deleteByIds(stale);
}

export async function deleteImageVectors(env: Env, images: { id: number; object_count: number }[]): Promise<void> {
  if (images.length === 0) return;
  await imageVectors(env).deleteByIds(images.map((image) => String(image.id)));
  const objects = images.flatMap((image) => objectVectorIds(image.id, 0, image.object_count));
  if (objects.length > 0) await objectVectors(env).deleteByIds(objects);
}
