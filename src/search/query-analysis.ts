import { z } from 'zod';
import { base64ToBytes, bytesToBase64 } from '../base64';
import type { Env } from '../env';
import { ApiError, invalidParameter } from '../http/envelope';
import { GENERAL, SEARCH_ERRORS } from '../http/messages';
import { inference } from '../ports/inference';
import {
  InferenceUnavailableError,
  RegionOutsideImageError,
  UndecodableImageError,
  type Box,
  type DetectedObject,
  type PredictOptions,
} from '../ports/inference/types';
import { box, detectedObject } from '@edge-image-search/contract/wire';
import { boxArea, intersectionArea, iou } from '@edge-image-search/contract/boxes';
import { vocabularyOf, type AppRecord } from '../storage/apps';
import { keptObjects, vocabularyKey, type DetectionMode, type Sensitivity } from './detection';

/** A searched area of the query image, with its embedding. */
export type QueryRegion = { box: Box; embedding: number[] };

const queryAnalysis = z.object({
  /** The embedding model of every embedding in it: one of another model is not kept for the application's searches. */
  embedModel: z.string(),
  /** The application's types it was detected with (vocabularyKey): one made under other types is not kept. */
  vocabulary: z.string(),
  /** Every type the detection could report. */
  types: z.array(z.string()),
  /** Detected objects of the whole image, most confident first. */
  objects: z.array(detectedObject),
  /** The whole image as a search target. */
  whole: z.object({ box, embedding: z.array(z.number()) }),
});

/**
 * What the inference service found in a whole query image. Kept with the image (storage/query-images.ts), so that a
 * later search by its `im_id` (a point, a box, another endpoint) works on the same objects rather than detecting
 * again: the same object is then searched with the same type, score and embedding whichever way it is named.
 */
export type QueryAnalysis = z.infer<typeof queryAnalysis>;

/**
 * An embedding as kept: the bytes of its float32 values (little-endian, as on every Workers host) in base64, about a
 * quarter of the size of its JSON numbers (an analysis with 30 objects: 77 KB of D1 row instead of 285 KB). The
 * service's embeddings are float32 values, so they come back exactly.
 */
const packEmbedding = (embedding: number[]): string => bytesToBase64(new Uint8Array(Float32Array.from(embedding).buffer));

const unpackEmbedding = (packed: string): number[] => Array.from(new Float32Array(base64ToBytes(packed).buffer));

const packedEmbedding = z.base64().transform(unpackEmbedding);

/** An analysis as kept: its embeddings packed. */
const keptAnalysis = queryAnalysis.extend({
  objects: z.array(detectedObject.extend({ embedding: packedEmbedding })),
  whole: z.object({ box, embedding: packedEmbedding }),
});

/** The text an analysis is kept as. */
export const keptAnalysisText = (analysis: QueryAnalysis): string =>
  JSON.stringify({
    ...analysis,
    objects: analysis.objects.map((object) => ({ ...object, embedding: packEmbedding(object.embedding) })),
    whole: { ...analysis.whole, embedding: packEmbedding(analysis.whole.embedding) },
  });

/** What an analysis is made under: the application's embedding model and its types. */
export type AnalysedApp = Pick<AppRecord, 'embedModel' | 'productTypes'>;

/**
 * A kept analysis read back; undefined when it is not one, or was made by another embedding model than the
 * application's (it moved to a new one since) or under other types: the image is then analysed again.
 */
export function parseQueryAnalysis(text: string, app: AnalysedApp): QueryAnalysis | undefined {
  try {
    const analysis = keptAnalysis.parse(JSON.parse(text));
    return analysis.embedModel === app.embedModel && analysis.vocabulary === vocabularyKey(app) ? analysis : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A box and a detected object whose boxes overlap at least this much (IoU) are the same object: the detection
 * benchmarks' own match threshold, loose enough for a box drawn by hand around the object.
 */
const SAME_OBJECT_IOU = 0.5;

/** The object of `objects` a box names: the one it overlaps most, at SAME_OBJECT_IOU or more; the first of equals. */
function objectOfBox<T extends { box: Box }>(objects: T[], box: Box): T | undefined {
  let best: T | undefined;
  let bestOverlap = 0;
  for (const object of objects) {
    const overlap = iou(object.box, box);
    if (overlap >= SAME_OBJECT_IOU && overlap > bestOverlap) [best, bestOverlap] = [object, overlap];
  }
  return best;
}

/** The share of an object's box inside another box. */
const shareInside = (object: Box, box: Box): number => intersectionArea(object, box) / boxArea(object);

async function predictEmbedDetect(env: Env, bytes: Uint8Array, options: PredictOptions) {
  try {
    return await inference(env).predict(bytes, ['embed', 'detect'], options);
  } catch (error) {
    if (error instanceof UndecodableImageError) throw new ApiError(400, SEARCH_ERRORS.invalidImageOrUrl);
    if (error instanceof RegionOutsideImageError) throw invalidParameter('box is outside the image.');
    if (error instanceof InferenceUnavailableError) throw new ApiError(503, GENERAL.busy);
    throw error;
  }
}

/**
 * Embeds and detects once on the whole query image. Detection always runs: its type list is part of every answer,
 * and a `detection` value can only be told from an unsupported one by the types the detector knows.
 */
export async function analyzeImage(env: Env, bytes: Uint8Array, app: AnalysedApp): Promise<QueryAnalysis> {
  const prediction = await predictEmbedDetect(env, bytes, { embedModel: app.embedModel, vocabulary: vocabularyOf(app) });
  const { width, height } = prediction.image;
  return {
    embedModel: prediction.embed.model,
    vocabulary: vocabularyKey(app),
    types: prediction.detect.types,
    objects: prediction.detect.objects,
    whole: { box: [0, 0, width, height], embedding: prediction.embed.vector },
  };
}

/** A box's own content: embedded and detected on its own. */
export type BoxContent = {
  region: QueryRegion;
  /** The object detected inside the box that fills it, if one does: the content is searched as its type. */
  filling: DetectedObject | undefined;
  /** The objects detected inside the box that the mode and sensitivity keep, most confident first. */
  inside: DetectedObject[];
};

/**
 * What a box names, among the objects of the whole image that the search's `detection` mode and sensitivity keep
 * (what `/discoversearch` lists): `named`, the object the box is drawn around, exactly as discover reports it;
 * `within`, the other objects lying mostly inside the box, most confident first (as the service lists objects).
 * `content()` analyses the box on its own, once, for the searches that need it.
 */
export type BoxAnalysis = { named: DetectedObject | undefined; within: DetectedObject[]; content: () => Promise<BoxContent> };

/** A box with no area inside the image is refused before anything is kept. */
export function analyzeBox(
  env: Env,
  bytes: () => Promise<Uint8Array>,
  requested: Box,
  analysis: QueryAnalysis,
  detection: { mode: DetectionMode; sensitivity: Sensitivity },
  app: AnalysedApp,
): BoxAnalysis {
  if (iou(requested, analysis.whole.box) === 0) throw invalidParameter('box is outside the image.');
  const kept = keptObjects(analysis.objects, detection.mode, detection.sensitivity);
  const named = objectOfBox(kept, requested);
  const within = kept.filter((object) => object !== named && shareInside(object.box, requested) >= SAME_OBJECT_IOU);
  let content: Promise<BoxContent> | undefined;
  const analyzeContent = async (): Promise<BoxContent> => {
    const prediction = await predictEmbedDetect(env, await bytes(), { box: requested, embedModel: analysis.embedModel, vocabulary: vocabularyOf(app) });
    const region = { box: prediction.box ?? requested, embedding: prediction.embed.vector };
    const inside = keptObjects(prediction.detect.objects, detection.mode, detection.sensitivity);
    return { region, filling: objectOfBox(inside, region.box), inside };
  };
  return { named, within, content: () => (content ??= analyzeContent()) };
}
