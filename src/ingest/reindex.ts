/**
 * Model upgrades without re-inserting (issue 21): an application's stored originals (R2) are embedded again by a
 * new model into that model's indexes, a chunk per queue message, while its searches keep using the old model's.
 * Progress lives in D1 (`images.model`, `reindexes`), so a reindex whose message was lost resumes from there
 * (the sweeper sends another). Each step's message carries the step's number: a superseded chain of messages (a
 * redelivery, a resume) stops at its next step. Once every image is in the new model, one D1 batch moves the
 * application onto it (storage/reindexes.ts, switchToNewModel); then, once the inserts accepted before that applied
 * and no metadata update is rewriting vectors, its vectors in every other model are deleted.
 */
import { base64ToBytes } from '../base64';
import type { Env } from '../env';
import { inference } from '../ports/inference';
import { UndecodableImageError, UnknownEmbedModelError, type DetectVocabulary } from '../ports/inference/types';
import { appCacheTtlMs } from '../storage/app-cache';
import { getSchema, type AppRecord, type SchemaField } from '../storage/apps';
import { catalogDatabase } from '../storage/databases';
import { getImagesByIds } from '../storage/images';
import type { ImageMetadata } from '../storage/metadata';
import {
  advanceReindex,
  failReindex,
  getReindex,
  imagesAfter,
  imagesToReembed,
  oldModelWritesPending,
  markReembedded,
  noteReindexError,
  resumeReindex,
  stalledReindexes,
  switchToNewModel,
  writeTargets,
  type ImageToReembed,
  type Reindex,
} from '../storage/reindexes';
import { deleteEmbeddings, deleteEmbeddingsExcept, imageVectors, objectVectors, vectorMetadata, writeEmbedding } from '../storage/vectors';
import { embeddingMismatch } from './embedding-mismatch';
import { ENDED, MAX_RESUMES, nextStep, stalledReason, type JobKind, type JobStep } from './job-step';
import type { ReindexMessage } from './message';
import { DEFER_SECONDS } from './retry-policy';

/** Images embedded again per step, side by side: each a bulk prediction, as an insert's is. */
const REEMBED_CHUNK = 10;
/** Images whose old vectors are deleted per message. */
const RETIRE_CHUNK = 100;

/** The reindex cannot go on without the operator: it is recorded as failed, and the application stays where it is. */
export class ReindexFailed extends Error {}

async function reembed(env: Env, db: D1Database, reindex: Reindex, image: ImageToReembed, schema: SchemaField[], vocabulary: DetectVocabulary | undefined): Promise<void> {
  const stillLive = async () => (await getImagesByIds(db, reindex.appId, [image.id], [])).size > 0;
  const stored = await env.BLOBS.get(image.blob_key);
  if (!stored) {
    // A version replaced or removed since it was listed has nothing left to embed; a live one must have its bytes.
    if (await stillLive()) throw new ReindexFailed(`The stored image of version ${image.id} is missing.`);
    return;
  }
  const bytes = new Uint8Array(await stored.arrayBuffer());
  let prediction;
  try {
    prediction = await inference(env).predict(bytes, ['embed', 'detect'], { priority: 'bulk', embedModel: reindex.toModel, vocabulary });
  } catch (error) {
    if (error instanceof UnknownEmbedModelError) throw new ReindexFailed(error.message);
    if (error instanceof UndecodableImageError) throw new ReindexFailed(`The stored image of version ${image.id} cannot be read: ${error.message}`);
    throw error;
  }
  const mismatch = embeddingMismatch(env, reindex.toModel, prediction.embed);
  if (mismatch) throw new ReindexFailed(mismatch);
  const metadata = vectorMetadata(JSON.parse(image.metadata) as ImageMetadata, schema);
  // The same detector finds the same objects; the version's count bounds the ids its other vectors use.
  const objects = prediction.detect.objects.slice(0, image.object_count);
  await writeEmbedding(env, { id: image.id, appId: reindex.appId, metadata }, { model: reindex.toModel, vector: prediction.embed.vector, objects });
  if (await markReembedded(db, image, reindex.toModel)) return;
  // Retired while it was embedded: what it wrote now is deleted too (the retired version's deletion may have run first).
  if (!(await stillLive())) await deleteEmbeddings(env, reindex.toModel, [image]);
}

/** A 16x16 grey PNG: what the inference service is asked to embed before a reindex relies on a model. */
const PROBE_IMAGE = base64ToBytes('iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFElEQVR42mNoIBEwjGoY1TB8NQAAJYSAELxv8c8AAAAASUVORK5CYII=');

/**
 * Why `model` cannot take an application's vectors here, if it cannot: its indexes are not bound, or the inference
 * service has not loaded it or makes vectors of other dimensions. Checked before a reindex begins, so that a
 * configuration mistake is answered at once rather than failing its inserts and steps one by one.
 */
export async function embedModelProblem(env: Env, model: string): Promise<string | undefined> {
  try {
    imageVectors(env, model);
    objectVectors(env, model);
  } catch (error) {
    return String(error instanceof Error ? error.message : error);
  }
  try {
    const { embed } = await inference(env).predict(PROBE_IMAGE, ['embed'], { embedModel: model });
    return embeddingMismatch(env, model, embed);
  } catch (error) {
    if (error instanceof UnknownEmbedModelError) return error.message;
    throw error;
  }
}

/** Step `step` of an application's reindex (a queue message's work). Throws what the queue should retry. */
export async function continueReindex(env: Env, app: AppRecord, step: number): Promise<JobStep> {
  const appId = app.id;
  const db = catalogDatabase(env, app);
  const reindex = await getReindex(db, appId);
  if (!reindex || reindex.step !== step || (reindex.state !== 'embedding' && reindex.state !== 'retiring')) return ENDED;
  if (reindex.state === 'retiring') {
    if (await oldModelWritesPending(db, reindex)) return nextStep('wait', await advanceReindex(db, reindex));
    const images = await imagesAfter(db, appId, reindex.toModel, reindex.retireCursor, RETIRE_CHUNK);
    await deleteEmbeddingsExcept(env, reindex.toModel, images);
    if (images.length === 0) {
      await advanceReindex(db, reindex, { done: true });
      return ENDED;
    }
    return nextStep('now', await advanceReindex(db, reindex, { retireCursor: images.at(-1)!.id }));
  }
  try {
    const images = await imagesToReembed(db, appId, reindex.toModel, REEMBED_CHUNK);
    if (images.length > 0) {
      const [schema, { vocabulary }] = await Promise.all([getSchema(env, app), writeTargets(env, app)]);
      await Promise.all(images.map((image) => reembed(env, db, reindex, image, schema, vocabulary)));
      return nextStep('now', await advanceReindex(db, reindex));
    }
    // Other isolates search the old model until their copy of the application expires (docs/decisions.md, Caching
    // the calling application): its vectors are retired only after that.
    if (await switchToNewModel(env, app, reindex)) return { next: 'wait', step: reindex.step + 1, delaySeconds: Math.max(DEFER_SECONDS, Math.ceil(appCacheTtlMs(env) / 1000) + 1) };
    return nextStep('wait', await advanceReindex(db, reindex));
  } catch (error) {
    if (!(error instanceof ReindexFailed)) throw error;
    console.error(JSON.stringify({ event: 'reindex_failed', appId, error: error.message }));
    await failReindex(db, appId, error.message);
    return ENDED;
  }
}

/** The reindex as a job (ingest/job-step.ts). */
export const REINDEX_JOB: JobKind<ReindexMessage, Reindex> = {
  name: 'reindex',
  appOf: (body) => body.reindex,
  message: (reindex, step) => ({ reindex, step }),
  run: continueReindex,
  rowsIn: 'catalog',
  noteError: noteReindexError,
  stalled: stalledReindexes,
  // One that keeps stalling while it embeds fails, the application staying on its model; its retire pass goes on.
  async recover(_env, db, reindex) {
    if (reindex.state !== 'embedding' || reindex.resumes < MAX_RESUMES) return resumeReindex(db, reindex.appId, true);
    await failReindex(db, reindex.appId, stalledReason(reindex));
    return null;
  },
};
