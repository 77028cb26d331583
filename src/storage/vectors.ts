import { paletteVector } from '../colors/palette-vector';
import type { Env } from '../env';
import type { DetectedObject, PaletteColor } from '../ports/inference/types';
import { vectorIndex } from '../ports/vector-index';
import { metadataBytes, VECTORIZE_LIMITS } from '../ports/vector-index/limits';
import type { VectorIndex, VectorMetadata } from '../ports/vector-index/types';
import type { SchemaField } from './apps';
import type { ImageMetadata } from './images';
import { OBJECT_TYPE_KEY, vectorMetadataKey } from './vector-metadata';

/**
 * How the catalog lives in the vector indexes. Each image has one whole-image vector in the image index (id: the
 * image's D1 id) and one vector per detected object in the object index (id `<image id>.<k>`, metadata `type`),
 * all in the application's namespace. The colour index holds palette vectors under the same ids: the image's
 * (`<image id>`) and each object's (`<image id>.<k>`).
 */
export const IMAGE_INDEX = 'images';
export const OBJECT_INDEX = 'objects';
export const COLOR_INDEX = 'colors';

export const imageVectors = (env: Env): VectorIndex => vectorIndex(env, IMAGE_INDEX);
export const objectVectors = (env: Env): VectorIndex => vectorIndex(env, OBJECT_INDEX);
export const colorVectors = (env: Env): VectorIndex => vectorIndex(env, COLOR_INDEX);

const objectVectorIds = (imageId: number, from: number, to: number): string[] =>
  Array.from({ length: Math.max(0, to - from) }, (_, k) => `${imageId}.${from + k}`);

/** The image id of a vector of either index. */
export const imageIdOfVector = (vectorId: string): number => Number.parseInt(vectorId, 10);

/**
 * Writes the vectors of an image version under its id, before the version is applied (storage/images.ts): writing
 * them again is harmless, and what an earlier version wrote under its own id is retired with it.
 */
export async function writeImageVectors(
  env: Env,
  image: { id: number; appId: string; metadata: VectorMetadata },
  vector: number[],
  palette: PaletteColor[],
  objects: DetectedObject[],
): Promise<void> {
  const namespace = image.appId;
  const objectIds = objectVectorIds(image.id, 0, objects.length);
  const { metadata } = image;
  await imageVectors(env).upsert([{ id: String(image.id), namespace, values: vector, metadata }]);
  await colorVectors(env).upsert([
    { id: String(image.id), namespace, values: paletteVector(palette), metadata },
    ...objects.map((object, k) => ({ id: objectIds[k]!, namespace, values: paletteVector(object.colors ?? []), metadata })),
  ]);
  if (objects.length > 0) {
    await objectVectors(env).upsert(
      objects.map((object, k) => ({ id: objectIds[k]!, namespace, values: object.embedding, metadata: { ...metadata, [OBJECT_TYPE_KEY]: object.type } })),
    );
  }
}

/**
 * Gives every vector of an image (whole image, objects, palettes) new metadata, keeping its values and the object
 * type: a metadata-only update, with no new embedding.
 */
export async function replaceVectorMetadata(env: Env, image: { id: number; object_count: number }, metadata: VectorMetadata): Promise<void> {
  const imageId = String(image.id);
  const objectIds = objectVectorIds(image.id, 0, image.object_count);
  const rewrite = async (index: VectorIndex, ids: string[]): Promise<void> => {
    if (ids.length === 0) return;
    const records = await index.getByIds(ids);
    await index.upsert(
      records.map((record) => {
        const type = record.metadata?.[OBJECT_TYPE_KEY];
        return { ...record, metadata: type === undefined ? metadata : { ...metadata, [OBJECT_TYPE_KEY]: type } };
      }),
    );
  };
  await Promise.all([
    rewrite(imageVectors(env), [imageId]),
    rewrite(objectVectors(env), objectIds),
    rewrite(colorVectors(env), [imageId, ...objectIds]),
  ]);
}

export async function deleteImageVectors(env: Env, images: { id: number; object_count: number }[]): Promise<void> {
  if (images.length === 0) return;
  const imageIds = images.map((image) => String(image.id));
  const objectIds = images.flatMap((image) => objectVectorIds(image.id, 0, image.object_count));
  await imageVectors(env).deleteByIds(imageIds);
  await colorVectors(env).deleteByIds([...imageIds, ...objectIds]);
  if (objectIds.length > 0) await objectVectors(env).deleteByIds(objectIds);
}

/**
 * The metadata a vector carries so that filters can be pushed down to the index: the searchable string, int and
 * float fields whose names are valid metadata keys. Text fields are matched only after the query.
 */
export function vectorMetadata(metadata: ImageMetadata, schema: SchemaField[]): VectorMetadata {
  const carried: VectorMetadata = {};
  for (const field of schema) {
    const key = vectorMetadataKey(field.name);
    const value = metadata[field.name];
    if (key && field.searchable && field.type !== 'text' && value !== undefined) carried[key] = value;
  }
  return carried;
}

/** Object vectors carry the product type besides the image's metadata: room for a type name of this many bytes. */
const OBJECT_TYPE_ROOM = { [OBJECT_TYPE_KEY]: 'x'.repeat(64) };

/**
 * The field that makes an image's vector metadata too large for the index (Vectorize holds 10 KiB a vector): the
 * largest it carries, or undefined when it fits. A 5000-character value fits the API's limit but may not fit here.
 */
export function oversizedVectorField(metadata: ImageMetadata, schema: SchemaField[]): string | undefined {
  const carried = vectorMetadata(metadata, schema);
  if (metadataBytes({ ...carried, ...OBJECT_TYPE_ROOM }) <= VECTORIZE_LIMITS.maxMetadataBytes) return undefined;
  const sizes = schema
    .filter((field) => vectorMetadataKey(field.name) && vectorMetadataKey(field.name)! in carried)
    .map((field) => ({ name: field.name, bytes: metadataBytes({ value: carried[vectorMetadataKey(field.name)!]! }) }));
  return sizes.sort((a, b) => b.bytes - a.bytes)[0]?.name;
}
