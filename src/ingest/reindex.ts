import type { Env } from '../env';
import { inference } from '../ports/inference';
import { UndecodableImageError, UnknownEmbedModelError } from '../ports/inference/types';
import { getSchema, type SchemaField } from '../storage/apps';
import { getImagesByIds, type ImageMetadata } from '../storage/images';
import {
  advanceReindex,
  getReindex,
  imagesAfter,
  imagesToReembed,
  markReembedded,
  switchToNewModel,
  type ImageToReembed,
  type Reindex,
} from '../storage/reindexes';
import { deleteEmbeddings, vectorMetadata, writeEmbedding } from '../storage/vectors';

/**
 * Model upgrades without re-inserting (issue 21): an application's stored originals (R2) are embedded again by a
 * new model into that model's indexes, a chunk per queue message, while its searches keep using the old model's.
 * Progress lives in D1 (`images.embed_model`, `reindexes`), so a reindex whose message was lost resumes from there
 * (the sweeper sends another). Once every image is in the new model, one D1 batch moves the application onto it
 * (storage/reindexes.ts, switchToNewModel); then the old model's vectors of it are deleted.
 */
/** Images embedded again per message, side by side: a consumer batch's worth (wrangler.toml). */
const REEMBED_CHUNK = 10;
/** Images whose old vectors are deleted per message. */
const RETIRE_CHUNK = 100;

/** The reindex cannot go on without the operator: it is recorded as failed, and the application stays where it is. */
export class ReindexFailed extends Error {}

/** What the reindex's next message should do: go on now, look again after a pause, or nothing (it ended). */
export type ReindexStep = 'continue' | 'wait' | 'ended';

async function reembed(env: Env, reindex: Reindex, image: ImageToReembed, schema: SchemaField[]): Promise<void> {
  const stored = await env.BLOBS.get(image.blob_key);
  if (!stored) {
    // A version replaced or removed since it was listed has nothing left to embed; a live one must have its bytes.
    if ((await getImagesByIds(env.DB, reindex.appId, [image.id])).size > 0) throw new ReindexFailed(`The stored image of version ${image.id} is missing.`);
    return;
  }
  const bytes = new Uint8Array(await stored.arrayBuffer());
  let prediction;
  try {
    prediction = await inference(env).predict(bytes, ['embed', 'detect'], { priority: 'bulk', embedModel: reindex.toModel });
  } catch (error) {
    if (error instanceof UnknownEmbedModelError) throw new ReindexFailed(error.message);
    if (error instanceof UndecodableImageError) throw new ReindexFailed(`The stored image of version ${image.id} cannot be read: ${error.message}`);
    throw error;
  }
  const metadata = vectorMetadata(JSON.parse(image.metadata) as ImageMetadata, schema);
  // The same detector finds the same objects; the version's count bounds the ids its other vectors use.
  const objects = prediction.detect.objects.slice(0, image.object_count);
  await writeEmbedding(env, { id: image.id, appId: reindex.appId, metadata }, { model: reindex.toModel, vector: prediction.embed.vector, objects });
  await markReembedded(env.DB, image, reindex.toModel);
}

/** One step of an application's reindex (a queue message's work). Throws what the queue should retry. */
export async function continueReindex(env: Env, appId: string): Promise<ReindexStep> {
  const reindex = await getReindex(env.DB, appId);
  if (!reindex || reindex.state === 'done' || reindex.state === 'failed') return 'ended';
  try {
    if (reindex.state === 'embedding') {
      const images = await imagesToReembed(env.DB, appId, reindex.toModel, REEMBED_CHUNK);
      if (images.length > 0) {
        const schema = await getSchema(env.DB, appId);
        await Promise.all(images.map((image) => reembed(env, reindex, image, schema)));
        await advanceReindex(env.DB, appId);
        return 'continue';
      }
      if (await switchToNewModel(env.DB, reindex)) return 'continue';
      // Items accepted before the reindex are still pending: their images may be in the old model only.
      await advanceReindex(env.DB, appId);
      return 'wait';
    }
    const images = await imagesAfter(env.DB, appId, reindex.retireCursor, RETIRE_CHUNK);
    await deleteEmbeddings(env, reindex.fromModel, images);
    if (images.length === 0) {
      await advanceReindex(env.DB, appId, { state: 'done' });
      return 'ended';
    }
    await advanceReindex(env.DB, appId, { retireCursor: images.at(-1)!.id });
    return 'continue';
  } catch (error) {
    if (!(error instanceof ReindexFailed)) throw error;
    console.error(JSON.stringify({ event: 'reindex_failed', appId, error: error.message }));
    await advanceReindex(env.DB, appId, { state: 'failed', error: error.message });
    return 'ended';
  }
}
