/**
 * Tuning an application's search on a label field of its own (issue 44; docs/decisions.md, "Tuning on a label
 * field"), a job of the one shape (job-step.ts) with no new inference: the stored vectors are read back from the
 * model's index, a batch per step, into the fit's statistics (R2); the projection fitted once from them (a shrinkage
 * LDA, tuning/projection.ts) maps every image's and object's vector into the model's tuned indexes; held-out labelled
 * images are searched before and after; then the application moves to the tuning in one D1 batch, or stays untuned
 * when it would lose (unless asked), and the tuning's vectors are retired. Inserts meanwhile write both spaces
 * (storage/reindexes.ts, writeTargets); a phase that reads what inserts write waits for those accepted before it.
 */
import type { Env } from '../env';
import { appCacheTtlMs } from '../storage/app-cache';
import { getSchema, type AppRecord } from '../storage/apps';
import { catalogDatabase } from '../storage/databases';
import { embedModelIndexesOf } from '../storage/embed-models';
import { getImagesByIds } from '../storage/images';
import { deleteStatistics, deleteTuningBlobs, readProjection, readStatistics, writeProjection, writeStatistics } from '../storage/projections';
import {
  advanceTuning,
  decideTuning,
  earlierInsertsPending,
  endRetiring,
  failTuning,
  getTuning,
  imagesForTuning,
  labelsOf,
  noteTuningError,
  resumeTuning,
  stalledTunings,
  type Tuning,
  type TuningImage,
} from '../storage/tunings';
import { copyIntoTuned, deleteTunedEmbeddings, imageVectors, objectVectors, vectorMetadata } from '../storage/vectors';
import type { VectorIndex, VectorRecord } from '../ports/vector-index/types';
import { parseTimestamp } from '../time';
import { HELD_OUT_EVERY, isHeldOut } from '../tuning/held-out';
import { addLabelledVectors, emptyStatistics, fitProjection, projectVector } from '../tuning/projection';
import { ENDED, MAX_RESUMES, nextStep, stalledReason, type JobKind, type JobStep } from './job-step';
import type { TuningMessage } from './message';

/** Images whose stored vectors one fitting step reads. */
const FIT_CHUNK = 200;
/** Images (with their objects) one projecting step maps into the tuned indexes. */
const PROJECT_CHUNK = 50;
/** Images one evaluating step looks through for held-out queries. */
const EVALUATE_CHUNK = 50;
/** Images whose tuned vectors one retiring step deletes. */
const RETIRE_CHUNK = 100;
/** How long after an image is applied its vectors may still be unreadable (Vectorize applies writes asynchronously). */
const VECTORS_VISIBLE_WITHIN_MS = 10 * 60_000;
/** Ids per getByIds call: Vectorize returns at most 20 vectors with their values. */
const VECTORS_PER_READ = 20;
/** The held-out report searches at most this many images. */
export const MAX_HELD_OUT_QUERIES = 200;
/** The report's precision is at this rank (its `precision_at_5`), as `/search` with `limit=5` answers. */
export const PRECISION_AT = 5;

/** The tuning cannot go on: recorded as failed, the application untuned. */
class TuningFailed extends Error {}

/** The vectors of `ids` in `index`, read VECTORS_PER_READ at a time. */
async function readVectors(index: VectorIndex, ids: string[]): Promise<Map<string, VectorRecord>> {
  const reads: Promise<VectorRecord[]>[] = [];
  for (let start = 0; start < ids.length; start += VECTORS_PER_READ) reads.push(index.getByIds(ids.slice(start, start + VECTORS_PER_READ)));
  return new Map((await Promise.all(reads)).flat().map((record) => [record.id, record]));
}

const objectIds = (image: { id: number; object_count: number }): string[] => Array.from({ length: image.object_count }, (_, k) => `${image.id}.${k}`);

/** Whether an image's label is one the tuning fits or scores: one of its classes. */
const labelled = (tuning: Tuning, image: TuningImage): image is TuningImage & { label: string } => image.label !== null && tuning.classes.includes(image.label);

/** Waits until `notBefore` (isolates' cached copies of the application expire) and inserts of before the phase apply. */
async function mustWait(db: D1Database, tuning: Tuning): Promise<JobStep | undefined> {
  const wait = tuning.notBefore === null ? 0 : parseTimestamp(tuning.notBefore) - Date.now();
  if (wait > 0) return nextStep('wait', await advanceTuning(db, tuning), Math.max(1, Math.ceil(wait / 1000)));
  if (await earlierInsertsPending(db, tuning)) return nextStep('wait', await advanceTuning(db, tuning));
  return undefined;
}

/** Fitting: the labelled, not held-out images' stored vectors after the cursor into the statistics; at the end, the projection. */
async function fit(env: Env, tuning: Tuning, app: AppRecord): Promise<JobStep> {
  const [db, model] = [catalogDatabase(env, app), app.embedModel];
  const { appId, version } = tuning;
  const images = await imagesForTuning(db, appId, tuning.labelField, tuning.cursor, FIT_CHUNK);
  // The statistics are kept under the cursor they stop at, so that a step tried again adds its batch once.
  const kept = tuning.cursor === 0 ? null : await readStatistics(env.BLOBS, appId, version, tuning.cursor);
  if (tuning.cursor !== 0 && !kept) throw new TuningFailed(`The fit's statistics up to image ${tuning.cursor} are missing from R2.`);
  const statistics = kept ?? emptyStatistics(embedModelIndexesOf(env, model).dimensions);
  if (images.length === 0) {
    if (statistics.classes.size < 2) throw new TuningFailed(`Fewer than 2 labels of ${tuning.labelField} had stored vectors to fit (${statistics.classes.size}).`);
    if (![...statistics.classes.values()].some(({ count }) => count >= 2)) {
      throw new TuningFailed(
        `Each label of ${tuning.labelField} has at most one image to fit (one labelled image in ${HELD_OUT_EVERY} is held out, never fitted): label more images.`,
      );
    }
    let projection;
    try {
      projection = fitProjection(statistics);
    } catch (error) {
      throw new TuningFailed(`The fit failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    await writeProjection(env.BLOBS, appId, version, projection);
    const next = await advanceTuning(db, tuning, { state: 'projecting', cursor: 0, newPhase: true });
    await deleteStatistics(env.BLOBS, appId, version);
    return nextStep('now', next);
  }
  const fitted = images.filter((image) => labelled(tuning, image) && !isHeldOut(image.im_name));
  const vectors = await readVectors(imageVectors(env, model), fitted.map((image) => String(image.id)));
  const found = fitted.flatMap((image) => {
    const record = vectors.get(String(image.id));
    return record ? [{ label: image.label!, values: record.values }] : [];
  });
  addLabelledVectors(statistics, found);
  const cursor = images.at(-1)!.id;
  await writeStatistics(env.BLOBS, appId, version, cursor, statistics);
  const next = await advanceTuning(db, tuning, { cursor, fitted: found.length });
  // Kept until the cursor moved past them: a step tried again before that reads them again.
  if (next !== null && tuning.cursor !== 0) await deleteStatistics(env.BLOBS, appId, version, tuning.cursor);
  return nextStep('now', next);
}

/**
 * Projecting: every image after the cursor has its stored whole-image and object vectors mapped into the tuned
 * indexes, with its metadata as D1 has it; one removed or changed meanwhile is put right before the cursor moves.
 */
async function project(env: Env, tuning: Tuning, app: AppRecord): Promise<JobStep> {
  const [db, model] = [catalogDatabase(env, app), app.embedModel];
  const waiting = await mustWait(db, tuning);
  if (waiting) return waiting;
  const { appId } = tuning;
  // The version before is no longer read by any isolate once the wait is over (its application was untuned first).
  if (tuning.cursor === 0 && tuning.version > 1) await deleteTuningBlobs(env.BLOBS, appId, tuning.version - 1);
  const listed = await imagesForTuning(db, appId, tuning.labelField, tuning.cursor, PROJECT_CHUNK);
  if (listed.length === 0) return nextStep('now', await advanceTuning(db, tuning, { state: 'evaluating', cursor: 0 }));
  const ids = listed.map((image) => image.id);
  const [projection, schema, images, wholes, objects] = await Promise.all([
    readProjection(env.BLOBS, appId, tuning.version),
    getSchema(env, app),
    getImagesByIds(db, appId, ids, 'all'),
    readVectors(imageVectors(env, model), ids.map(String)),
    readVectors(objectVectors(env, model), listed.flatMap(objectIds)),
  ]);
  // Vectorize applies writes within seconds: an image applied lately whose vectors cannot be read yet is waited for;
  // one whose vectors are still missing long after is logged and left out (nothing could be projected of it).
  const unread = listed.filter((image) => images.has(image.id) && !wholes.has(String(image.id)));
  const appliedSince = Date.now() - VECTORS_VISIBLE_WITHIN_MS;
  if (unread.some((image) => image.updated_at > appliedSince)) return nextStep('wait', await advanceTuning(db, tuning));
  if (unread.length > 0) console.error(JSON.stringify({ event: 'tuning_vectors_missing', appId, images: unread.map((image) => image.id) }));
  const copies = [...images.values()].flatMap((image) => {
    const whole = wholes.get(String(image.id));
    if (!whole) return [];
    const found = objectIds(image).flatMap((id) => objects.get(id) ?? []);
    return [{ image: { id: image.id, appId, metadata: vectorMetadata(image.metadata, schema) }, whole, objects: found }];
  });
  await copyIntoTuned(env, model, copies, (values) => projectVector(projection, values));
  const after = await getImagesByIds(db, appId, ids, 'all');
  const gone = [...images.values()].filter((image) => !after.has(image.id));
  if (gone.length > 0) await deleteTunedEmbeddings(env, model, gone);
  const changed = [...after.values()].some((image) => JSON.stringify(image.metadata) !== JSON.stringify(images.get(image.id)?.metadata));
  // A metadata update raced the copy: the chunk is projected again with the metadata of now.
  if (changed) return nextStep('now', await advanceTuning(db, tuning));
  return nextStep('now', await advanceTuning(db, tuning, { cursor: listed.at(-1)!.id }));
}

/** The labels of the first PRECISION_AT images `matches` ranks, less the query image: what `/search` with `limit=5` answers. */
function firstImages(matches: { id: string }[], queryId: number): number[] {
  const ids: number[] = [];
  for (const match of matches) {
    const id = Number.parseInt(match.id, 10);
    if (id !== queryId && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/**
 * Evaluating: the held-out labelled images after the cursor are searched against the catalog's whole images, by
 * their stored vector untuned and projected, and the images of their label among the first PRECISION_AT counted.
 * At the end (or MAX_HELD_OUT_QUERIES), the application moves to the tuning, or not.
 */
async function evaluate(env: Env, tuning: Tuning, app: AppRecord): Promise<JobStep> {
  const [db, model] = [catalogDatabase(env, app), app.embedModel];
  const { appId } = tuning;
  const room = MAX_HELD_OUT_QUERIES - tuning.queries;
  const listed = room > 0 ? await imagesForTuning(db, appId, tuning.labelField, tuning.cursor, EVALUATE_CHUNK) : [];
  if (listed.length === 0) {
    const apply = tuning.apply === 'always' || tuning.hitsAfter >= tuning.hitsBefore;
    return nextStep('now', await decideTuning(env, app, tuning, apply, appCacheTtlMs(env)));
  }
  const queries = listed.filter((image) => labelled(tuning, image) && isHeldOut(image.im_name)).slice(0, room);
  const [projection, stored] = await Promise.all([readProjection(env.BLOBS, appId, tuning.version), readVectors(imageVectors(env, model), queries.map((image) => String(image.id)))]);
  // Deep enough that the query image and removed images (absent from D1) still leave PRECISION_AT.
  const topK = PRECISION_AT * 4;
  const [untuned, tuned] = [imageVectors(env, model), imageVectors(env, model, true)];
  const searched = await Promise.all(
    queries.flatMap((query) => {
      const record = stored.get(String(query.id));
      if (!record) return [];
      const search = async (index: VectorIndex, vector: number[]) => firstImages(await index.query(vector, { topK, namespace: appId }), query.id);
      return [Promise.all([search(untuned, record.values), search(tuned, projectVector(projection, record.values))]).then(([before, after]) => ({ query, before, after }))];
    }),
  );
  const labels = await labelsOf(db, appId, tuning.labelField, [...new Set(searched.flatMap(({ before, after }) => [...before, ...after]))]);
  // Removed images are absent from D1 and are skipped, as a search skips them.
  const hits = (ids: number[], label: string) => ids.filter((id) => labels.has(id)).slice(0, PRECISION_AT).filter((id) => labels.get(id) === label).length;
  let hitsBefore = 0;
  let hitsAfter = 0;
  for (const { query, before, after } of searched) {
    hitsBefore += hits(before, query.label!);
    hitsAfter += hits(after, query.label!);
  }
  return nextStep('now', await advanceTuning(db, tuning, { cursor: listed.at(-1)!.id, queries: searched.length, hitsBefore, hitsAfter }));
}

/** Retiring: the tuning's vectors of the application's images are deleted (after the wait), then what it kept in R2. */
async function retire(env: Env, tuning: Tuning, app: AppRecord): Promise<JobStep> {
  const [db, model] = [catalogDatabase(env, app), app.embedModel];
  const waiting = await mustWait(db, tuning);
  if (waiting) return waiting;
  const images = await imagesForTuning(db, tuning.appId, tuning.labelField, tuning.cursor, RETIRE_CHUNK);
  if (images.length === 0) {
    await deleteTuningBlobs(env.BLOBS, tuning.appId, tuning.version);
    await endRetiring(db, tuning);
    return ENDED;
  }
  await deleteTunedEmbeddings(env, model, images);
  return nextStep('now', await advanceTuning(db, tuning, { cursor: images.at(-1)!.id }));
}

const PHASES = { fitting: fit, projecting: project, evaluating: evaluate, retiring: retire } as const;

/** Step `step` of an application's tuning (a queue message's work). Throws what the queue should retry. */
export async function continueTuning(env: Env, app: AppRecord, step: number): Promise<JobStep> {
  const appId = app.id;
  const db = catalogDatabase(env, app);
  const tuning = await getTuning(db, appId);
  if (!tuning || tuning.step !== step || !(tuning.state in PHASES)) return ENDED;
  try {
    return await PHASES[tuning.state as keyof typeof PHASES](env, tuning, app);
  } catch (error) {
    if (!(error instanceof TuningFailed)) throw error;
    console.error(JSON.stringify({ event: 'tuning_failed', appId, error: error.message }));
    return nextStep('now', await failTuning(db, appId, error.message));
  }
}

/** The tuning as a job (ingest/job-step.ts). */
export const TUNING_JOB: JobKind<TuningMessage, Tuning> = {
  name: 'tuning',
  appOf: (body) => body.tuning,
  message: (tuning, step) => ({ tuning, step }),
  run: continueTuning,
  rowsIn: 'catalog',
  noteError: noteTuningError,
  stalled: stalledTunings,
  // One that keeps stalling while it is made fails, its vectors then retired (the step sent is the retire pass's).
  recover: (_env, db, tuning) =>
    tuning.state !== 'retiring' && tuning.resumes >= MAX_RESUMES ? failTuning(db, tuning.appId, stalledReason(tuning)) : resumeTuning(db, tuning.appId),
};
