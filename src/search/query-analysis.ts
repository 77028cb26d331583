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
import { iou } from '../../inference/src/models/detect/overlap';
import { keptObjects, ofMode, type DetectionMode, type Sensitivity } from './detection';

/** A searched area of the query image, with its embedding. */
export type QueryRegion = { box: Box; embedding: number[] };

/**
 * What the inference service found in a whole query image. Kept with the image (storage/query-images.ts), so that a
 * later search by its `im_id` (a point, a box, another endpoint) works on the same objects rather than detecting
 * again: the same object is then searched with the same type, score and embedding whichever way it is named.
 */
export type QueryAnalysis = {
  /** Every type the detector can report. */
  types: string[];
  /** Detected objects of the whole image, most confident first. */
  objects: DetectedObject[];
  /** The whole image as a search target. */
  whole: QueryRegion;
};

/** What a box names: a detected object of the whole image, or its own content (with what detection finds in it). */
export type BoxAnalysis =
  | { kind: 'object'; object: DetectedObject }
  | {
      kind: 'content';
      content: QueryRegion;
      /** The object detected inside the box that fills it, if one does: the content is searched as its type. */
      filling: DetectedObject | undefined;
      /** The objects detected inside the box that the mode and sensitivity keep, most confident first. */
      inside: DetectedObject[];
    };

/**
 * A box and a detected object whose boxes overlap at least this much (IoU) are the same object: the detection
 * benchmarks' own match threshold, loose enough for a box drawn by hand around the object.
 */
export const SAME_OBJECT_IOU = 0.5;

/** The object of `objects` a box names: the one it overlaps most, at SAME_OBJECT_IOU or more. */
export function objectOfBox(objects: DetectedObject[], box: Box): DetectedObject | undefined {
  let best: DetectedObject | undefined;
  let bestOverlap = SAME_OBJECT_IOU;
  for (const object of objects) {
    const overlap = iou(object.box, box);
    if (overlap >= bestOverlap) [best, bestOverlap] = [object, overlap];
  }
  return best;
}

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
export async function analyzeImage(env: Env, bytes: Uint8Array): Promise<QueryAnalysis> {
  const prediction = await predictEmbedDetect(env, bytes, {});
  const { width, height } = prediction.image;
  return {
    types: prediction.detect.types,
    objects: prediction.detect.objects,
    whole: { box: [0, 0, width, height], embedding: prediction.embed.vector },
  };
}

/**
 * What a box names. A box around an object the detector sees in the whole image (one of the `detection` mode's, as
 * a point may name it) is that object, exactly as `/discoversearch` reports it; any other box is its own content,
 * embedded and detected on its own.
 */
export async function analyzeBox(
  env: Env,
  bytes: Uint8Array,
  box: Box,
  analysis: QueryAnalysis,
  detection: { mode: DetectionMode; sensitivity: Sensitivity },
): Promise<BoxAnalysis> {
  const { mode, sensitivity } = detection;
  const named = objectOfBox(ofMode(analysis.objects, mode), box);
  if (named) return { kind: 'object', object: named };
  const prediction = await predictEmbedDetect(env, bytes, { box });
  const content = { box: prediction.box ?? box, embedding: prediction.embed.vector };
  const inside = keptObjects(prediction.detect.objects, mode, sensitivity);
  return { kind: 'content', content, filling: objectOfBox(inside, content.box), inside };
}
