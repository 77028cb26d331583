import type { Env } from '../env';
import { matches } from '../filter';
import type { VectorIndex } from '../ports/vector-index/types';
import { catalogDatabase } from '../storage/databases';
import { getImagesByIds, type ImageSummary } from '../storage/images';
import type { ImageMetadata } from '../storage/metadata';
import { readProjection } from '../storage/projections';
import { metadataIndexes } from '../storage/vector-metadata';
import { colorVectors, imageIdOfVector, imageVectors, objectVectors } from '../storage/vectors';
import { projectVector } from '../tuning/projection';
import type { IndexFacts, IndexQuery, SearchPlan } from './plan';

/**
 * An image the search found, at its best match (its whole picture's or an object's). `score` is the raw cosine,
 * which ranks; the answer clamps it only when shown (search/answer.ts), since a text's cosines with unrelated images
 * are often below 0 (SigLIP) and must still rank.
 */
export type Candidate = { image: ImageSummary; score: number };

type Match = { imageId: number; score: number; fromObject: boolean };

/** What planning needs to know of the deployment: the indexes' depth, and the metadata they filter on. */
export const indexFacts = (env: Env, embedModel: string): IndexFacts => ({
  maxTopK: imageVectors(env, embedModel).maxTopK,
  metadataIndexes: metadataIndexes(env),
});

const indexOf = (env: Env, plan: SearchPlan, index: IndexQuery['index']): VectorIndex => {
  const tuned = plan.tuning !== null;
  return index === 'colors' ? colorVectors(env) : index === 'images' ? imageVectors(env, plan.embedModel, tuned) : objectVectors(env, plan.embedModel, tuned);
};

/** The plan's query vector in the space of the indexes it searches: projected by the application's tuning, if any. */
async function queryVector(env: Env, plan: SearchPlan): Promise<number[]> {
  if (plan.tuning === null) return plan.vector;
  return projectVector(await readProjection(env.BLOBS, plan.appId, plan.tuning), plan.vector);
}

/** The nearest vectors of every index query in the application's namespace, less the excluded images. */
async function nearest(env: Env, plan: SearchPlan): Promise<Match[]> {
  const excluded = new Set(plan.excludeIds);
  const vector = await queryVector(env, plan);
  const found = await Promise.all(
    plan.queries.map(async ({ index, filter }) => {
      const vectors = await indexOf(env, plan, index).query(vector, { topK: plan.depth, namespace: plan.appId, ...(filter ? { filter } : {}) });
      return vectors.map((match) => ({ imageId: imageIdOfVector(match.id), score: match.score, fromObject: index === 'objects' }));
    }),
  );
  return found.flat().filter((match) => !excluded.has(match.imageId));
}

/**
 * Runs a plan's index queries and joins them with D1, so that removed images and other applications' vectors never
 * show; keeps the images that pass the plan's exact checks, each once at its best score. Candidates carry only the
 * metadata ranking reads.
 */
export async function findCandidates(env: Env, plan: SearchPlan): Promise<Candidate[]> {
  const found = await nearest(env, plan);
  const images = await getImagesByIds(catalogDatabase(env, plan), plan.appId, [...new Set(found.map((match) => match.imageId))], plan.readFields);
  const best = new Map<number, Candidate>();
  for (const match of found) {
    const image = images.get(match.imageId);
    if (!image || (plan.wholeImagesWithoutObjectsOnly && !match.fromObject && image.object_count > 0) || !matches(plan.filter, image.metadata)) continue;
    if ((best.get(image.id)?.score ?? -Infinity) < match.score) best.set(image.id, { image, score: match.score });
  }
  return [...best.values()];
}

/**
 * The metadata `value_map` shows of the images on the page, by id: read for them alone where ranking did not read it
 * already, so that `fl` costs what the page answers and not what the candidates hold.
 */
export async function readShownMetadata(env: Env, plan: SearchPlan, shown: ImageSummary[]): Promise<Map<number, ImageMetadata>> {
  if (!plan.valueMap?.readForPage) return new Map(shown.map((image) => [image.id, image.metadata]));
  const images = await getImagesByIds(catalogDatabase(env, plan), plan.appId, shown.map((image) => image.id), plan.valueMap.fields);
  return new Map([...images].map(([id, image]) => [id, image.metadata]));
}
