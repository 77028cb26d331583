import { paletteVector } from '../colors/palette-vector';
import type { Env } from '../env';
import type { DetectedObject, PaletteColor } from '../ports/inference/types';
import { vectorIndex } from '../ports/vector-index';
import { colorIndexes, embedModels, vectorIndexNames } from './embed-models';
import { shardPlacement, type IndexGroup } from './placement';
import { metadataBytes } from '../ports/vector-index/limits';
import { VECTORIZE_LIMITS } from '../vectorize-limits';
import type { VectorIndex, VectorMetadata, VectorRecord } from '../ports/vector-index/types';
import type { SchemaField } from './apps';
import { fieldValue, type ImageMetadata } from './metadata';
import { isCarriedByVectors, OBJECT_TYPE_KEY, vectorMetadataKey } from './vector-metadata';

/**
 * How the catalog lives in the vector indexes. Each image has one whole-image vector in the image index (id: the
 * image's D1 id) and one vector per detected object in the object index (id `<image id>.<k>`, metadata `type`),
 * all in the application's namespace. Each embedding model has an image and an object index of its own
 * (storage/embed-models.ts): an application searches those of its model, and a reindex fills another's. The colour
 * indexes, one group for every model, hold palette vectors under the same ids: the image's and each object's. Each is
 * a group of indexes over which an application's shards are placed (storage/placement.ts).
 */
const placedGroup = (env: Env, group: IndexGroup): VectorIndex => vectorIndex(env, group.indexes, (appId) => shardPlacement(env, appId, group));

/** A model's whole-image index: its own, or (`tuned`) that of its tuned applications' projected vectors. */
export const imageVectors = (env: Env, model: string, tuned = false): VectorIndex => placedGroup(env, { kind: 'images', indexes: vectorIndexNames(env, model, tuned).images });
export const objectVectors = (env: Env, model: string, tuned = false): VectorIndex => placedGroup(env, { kind: 'objects', indexes: vectorIndexNames(env, model, tuned).objects });
export const colorVectors = (env: Env): VectorIndex => placedGroup(env, { kind: 'colors', indexes: colorIndexes(env) });

const objectVectorIds = (imageId: number, from: number, to: number): string[] =>
  Array.from({ length: Math.max(0, to - from) }, (_, k) => `${imageId}.${from + k}`);

/** The image id of a vector of either index. */
export const imageIdOfVector = (vectorId: string): number => Number.parseInt(vectorId, 10);

/** An image version as its vectors carry it. */
export type VectorImage = { id: number; appId: string; metadata: VectorMetadata };
/**
 * What one embedding model made of an image: its whole-image vector and its detected objects, each embedded; `tuned`:
 * those vectors projected by the application's tuning, for the model's tuned indexes.
 */
export type ModelEmbedding = { model: string; vector: number[]; objects: DetectedObject[]; tuned?: boolean };

/** Writes an image's whole-image and object vectors into the indexes of the model that made them. */
export async function writeEmbedding(env: Env, image: VectorImage, embedding: ModelEmbedding): Promise<void> {
  const namespace = image.appId;
  const { metadata } = image;
  const objectIds = objectVectorIds(image.id, 0, embedding.objects.length);
  const tuned = embedding.tuned ?? false;
  await imageVectors(env, embedding.model, tuned).upsert([{ id: String(image.id), namespace, values: embedding.vector, metadata }]);
  if (embedding.objects.length > 0) {
    await objectVectors(env, embedding.model, tuned).upsert(
      embedding.objects.map((object, k) => ({ id: objectIds[k]!, namespace, values: object.embedding, metadata: { ...metadata, [OBJECT_TYPE_KEY]: object.type } })),
    );
  }
}

/**
 * Writes the vectors of an image version under its id, before the version is applied (storage/images.ts): its
 * embeddings (one per model it must be searchable by, ingest/insert-item.ts) and the palettes of the image and of
 * `objects`. Writing them again is harmless, and what an earlier version wrote under its own id is retired with it.
 */
export async function writeImageVectors(
  env: Env,
  image: VectorImage,
  embeddings: ModelEmbedding[],
  palette: PaletteColor[],
  objects: DetectedObject[],
): Promise<void> {
  const namespace = image.appId;
  const objectIds = objectVectorIds(image.id, 0, objects.length);
  const { metadata } = image;
  await Promise.all([
    ...embeddings.map((embedding) => writeEmbedding(env, image, embedding)),
    colorVectors(env).upsert([
      { id: String(image.id), namespace, values: paletteVector(palette), metadata },
      ...objects.map((object, k) => ({ id: objectIds[k]!, namespace, values: paletteVector(object.colors ?? []), metadata })),
    ]),
  ]);
}

/** An index, and which of an image's vectors it holds: the whole image's, its objects', or both (the colour index). */
type HeldVectors = { index: VectorIndex; holds: 'image' | 'objects' | 'both' };

/** A model's image and object indexes, and its tuned ones where it has them. */
const embeddingIndexes = (env: Env, model: string): HeldVectors[] => [
  { index: imageVectors(env, model), holds: 'image' },
  { index: objectVectors(env, model), holds: 'objects' },
  ...(embedModels(env).get(model)?.tuned ? tunedIndexes(env, model) : []),
];

const tunedIndexes = (env: Env, model: string): HeldVectors[] => [
  { index: imageVectors(env, model, true), holds: 'image' },
  { index: objectVectors(env, model, true), holds: 'objects' },
];

/** The indexes of `models` and the colour index. */
const indexesOf = (env: Env, models: Iterable<string>): HeldVectors[] => [
  ...[...models].flatMap((model) => embeddingIndexes(env, model)),
  { index: colorVectors(env), holds: 'both' },
];

/** Every index an image's vectors may be in: each model's image and object indexes, and the colour index. */
const everyIndex = (env: Env): HeldVectors[] => indexesOf(env, embedModels(env).keys());

/** The ids of the vectors an index holds of some images. */
function heldIds(holds: HeldVectors['holds'], images: { id: number; object_count: number }[]): string[] {
  const imageIds = holds === 'objects' ? [] : images.map((image) => String(image.id));
  const objectIds = holds === 'image' ? [] : images.flatMap((image) => objectVectorIds(image.id, 0, image.object_count));
  return [...imageIds, ...objectIds];
}

/**
 * Gives every vector of an image in `models`' indexes and the colour index (whole image, objects, palettes) new
 * metadata, keeping its values and the object type: a metadata-only update, with no new embedding.
 */
export async function replaceVectorMetadata(env: Env, image: { id: number; object_count: number }, metadata: VectorMetadata, models: string[]): Promise<void> {
  const rewrite = async ({ index, holds }: HeldVectors): Promise<void> => {
    const ids = heldIds(holds, [image]);
    if (ids.length === 0) return;
    const records = await index.getByIds(ids);
    if (records.length === 0) return;
    await index.upsert(
      records.map((record) => {
        const type = record.metadata?.[OBJECT_TYPE_KEY];
        return { ...record, metadata: type === undefined ? metadata : { ...metadata, [OBJECT_TYPE_KEY]: type } };
      }),
    );
  };
  await Promise.all(indexesOf(env, models).map(rewrite));
}

/** Deletes the whole-image and object vectors of images from one model's indexes. */
export async function deleteEmbeddings(env: Env, model: string, images: { id: number; object_count: number }[]): Promise<void> {
  await deleteFrom(embeddingIndexes(env, model), images);
}

/**
 * Deletes the whole-image and object vectors of images from every model's indexes but `kept`'s: what a reindex
 * leaves behind once its application is on `kept`, including what an earlier, failed reindex into a third model wrote.
 */
export async function deleteEmbeddingsExcept(env: Env, kept: string, images: { id: number; object_count: number }[]): Promise<void> {
  const others = [...embedModels(env).keys()].filter((model) => model !== kept);
  await deleteFrom(others.flatMap((model) => embeddingIndexes(env, model)), images);
}

/**
 * Copies an image's stored whole-image and object vectors of a model into its tuned indexes, each mapped by `map` (a
 * tuning's projection), under the same ids, with `metadata` (an object's type kept): a tuning's projecting pass.
 */
export async function copyIntoTuned(
  env: Env,
  model: string,
  copies: { image: VectorImage; whole: VectorRecord; objects: VectorRecord[] }[],
  map: (values: number[]) => number[],
): Promise<void> {
  const objectCopies = copies.flatMap(({ image, objects }) =>
    objects.map((record) => ({ id: record.id, namespace: image.appId, values: map(record.values), metadata: { ...image.metadata, [OBJECT_TYPE_KEY]: record.metadata?.[OBJECT_TYPE_KEY] ?? '' } })),
  );
  await Promise.all([
    copies.length > 0 && imageVectors(env, model, true).upsert(copies.map(({ image, whole }) => ({ id: String(image.id), namespace: image.appId, values: map(whole.values), metadata: image.metadata }))),
    objectCopies.length > 0 && objectVectors(env, model, true).upsert(objectCopies),
  ]);
}

/** Deletes the tuned vectors of images from their model's tuned indexes: a tuning's retire pass. */
export async function deleteTunedEmbeddings(env: Env, model: string, images: { id: number; object_count: number }[]): Promise<void> {
  await deleteFrom(tunedIndexes(env, model), images);
}

/** Deletes every vector of images, from every index. */
export async function deleteImageVectors(env: Env, images: { id: number; object_count: number }[]): Promise<void> {
  await deleteFrom(everyIndex(env), images);
}

async function deleteFrom(indexes: HeldVectors[], images: { id: number; object_count: number }[]): Promise<void> {
  await Promise.all(
    indexes.map(({ index, holds }) => {
      const ids = heldIds(holds, images);
      return ids.length > 0 ? index.deleteByIds(ids) : undefined;
    }),
  );
}

/**
 * The metadata a vector carries so that filters can be pushed down to the index: the searchable string, int and
 * float fields whose names are valid metadata keys. Text fields are matched only after the query.
 */
export function vectorMetadata(metadata: ImageMetadata, schema: SchemaField[]): VectorMetadata {
  const carried: VectorMetadata = {};
  for (const field of schema) {
    const value = fieldValue(metadata, field.name);
    if (isCarriedByVectors(field) && value !== undefined) carried[vectorMetadataKey(field.name)!] = value;
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
