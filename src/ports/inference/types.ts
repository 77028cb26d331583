/** The inference port: one call runs every asked task on one image (DESIGN.md: `POST /predict {image, tasks}`). */

export type Task = 'embed';

export type Prediction = {
  image: { width: number; height: number; format: string };
  embed?: { model: string; dim: number; vector: number[] };
};

export interface Inference {
  predict(image: Uint8Array, tasks: Task[]): Promise<Prediction>;
}

/** The bytes are not an image the models can read: a permanent failure for this image. */
export class UndecodableImageError extends Error {
  override name = 'UndecodableImageError';
}

/** The service is down, slow or broken: worth retrying later. */
export class InferenceUnavailableError extends Error {
  override name = 'InferenceUnavailableError';
}
