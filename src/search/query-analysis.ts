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
} from '../ports/inference/types';
import type { QueryImage } from './query-image';
import type { Region } from './region';

export type QueryAnalysis = {
  /** Every type the detector can report. */
  types: string[];
  /** Detected objects in the analysed region, most confident first. */
  objects: DetectedObject[];
  /** The analysed region itself as a search target: the whole image or the box. */
  region: { box: Box; embedding: number[] };
};

/**
 * Embeds and detects once on the query image, or on its box. Detection always runs: its type list is part of every
 * answer, and a `detection` value can only be told from an unsupported one by the types the detector knows.
 */
export async function analyzeQuery(env: Env, query: QueryImage, region: Region): Promise<QueryAnalysis> {
  const box = region.kind === 'box' ? region.box : undefined;
  try {
    const prediction = await inference(env).predict(query.bytes, ['embed', 'detect'], box ? { box } : {});
    const { width, height } = prediction.image;
    return {
      types: prediction.detect.types,
      objects: prediction.detect.objects,
      region: { box: box ?? [0, 0, width, height], embedding: prediction.embed.vector },
    };
  } catch (error) {
    if (error instanceof UndecodableImageError) throw new ApiError(400, SEARCH_ERRORS.invalidImageOrUrl);
    if (error instanceof RegionOutsideImageError) throw invalidParameter('box is outside the image.');
    if (error instanceof InferenceUnavailableError) throw new ApiError(503, GENERAL.busy);
    throw error;
  }
}
