/**
 * The inference port: one call runs every asked task on one image, or embeds one text. The wire types come from the
 * service's contract (contract/wire.ts, `POST /predict`), so both sides read one description.
 */
import type { DetectorInfo, Prediction, PredictOptions, Task, TextPrediction } from '@edge-image-search/contract/wire';

export { MAX_DETECTED_OBJECTS, MAX_TEXT_LENGTH } from '@edge-image-search/contract/wire';

export type {
  Box,
  DetectedObject,
  DetectorInfo,
  DetectVocabulary,
  ExternalDetections,
  PaletteColor,
  Prediction,
  PredictOptions,
  Priority,
  RawDetection,
  Task,
  TextPrediction,
} from '@edge-image-search/contract/wire';

export interface Inference {
  /** The answer holds the result of every asked task. */
  predict<T extends Task>(image: Uint8Array, tasks: readonly T[], options?: PredictOptions): Promise<Prediction<T>>;
  /** The text tower's vector of a text (at most MAX_TEXT_LENGTH), comparable with that model's image vectors. */
  embedText(text: string, options: { embedModel: string }): Promise<TextPrediction['embed']>;
  /** What the service's detector can report (its `/health`), for checking an application's own types. */
  detector(): Promise<DetectorInfo>;
}

/** The bytes are not an image the models can read: a permanent failure for this image. */
export class UndecodableImageError extends Error {
  override name = 'UndecodableImageError';
}

/** The service is down, slow or broken: worth retrying later. */
export class InferenceUnavailableError extends Error {
  override name = 'InferenceUnavailableError';
}

/** The service refused the prediction as busy, before reading it: worth retrying after `retryAfterSeconds`. */
export class InferenceBusyError extends InferenceUnavailableError {
  override name = 'InferenceBusyError';
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The service has not loaded the embedding model asked for: a configuration error (EMBED_MODELS against the service). */
export class UnknownEmbedModelError extends Error {
  override name = 'UnknownEmbedModelError';
}

/** The embedding model has no text tower (a CLIP or SigLIP model has one): it cannot embed a text. */
export class ModelReadsNoTextError extends Error {
  override name = 'ModelReadsNoTextError';
}

/** The region asked for lies outside the image. */
export class RegionOutsideImageError extends Error {
  override name = 'RegionOutsideImageError';
}
