/** The inference port: one call runs every asked task on one image (`POST /predict {image, tasks}`, inference/README.md). */

export type Task = 'embed' | 'detect' | 'colors';

/** A dominant colour: `hex` is `rrggbb`, `ratio` its share of the image (or object), 0 to 1. */
export type PaletteColor = { hex: string; ratio: number };

/** x1, y1, x2, y2 in the original image's pixels; (0,0) is the top-left corner. */
export type Box = [number, number, number, number];

export type DetectedObject = {
  /** The spec's product type, e.g. `Bag`. */
  type: string;
  /** The detector's own label, e.g. `handbag`. */
  label: string;
  score: number;
  box: Box;
  /** The embed model's vector of the object's crop, comparable with whole-image vectors. */
  embedding: number[];
  /** The object's own dominant colours, when `colors` was asked too. */
  colors?: PaletteColor[];
};

/** The most objects a `detect` answers (the inference service's DETECT_MAX_OBJECTS). */
export const MAX_DETECTED_OBJECTS = 30;

export type Prediction = {
  image: { width: number; height: number; format: string };
  embed?: { model: string; dim: number; vector: number[] };
  /** Objects by descending score; `types` are every type the loaded detector can report. */
  detect?: { model: string; types: string[]; objects: DetectedObject[] };
  /** Dominant colours by descending ratio, measured in CIELAB, transparent pixels and a plain background left out. */
  colors?: { model: string; palette: PaletteColor[] };
};

/** One raw detection of an external detector, in its own vocabulary (COCO labels for DETR and the local CenterNet). */
export type RawDetection = {
  label: string;
  /** Confidence in [0, 1]. */
  score: number;
  /** x1, y1, x2, y2 in the original image's pixels, fractional, possibly reaching past the image. */
  box: Box;
};

/** Raw detections made elsewhere (Workers AI) for the service to finish as its own detect task would. */
export type ExternalDetections = {
  /** Names the detector; reported as `detect.model`. */
  model: string;
  objects: RawDetection[];
};

export type PredictOptions = {
  /** Runs every task on this region only; coordinates in the answer stay in the original image's pixels. */
  box?: Box;
  /**
   * With `detect` asked: use these detections instead of the service's own detector. The service still maps labels
   * to product types, applies the score floor and suppression, and embeds and colours each object's crop.
   */
  detections?: ExternalDetections;
};

export interface Inference {
  predict(image: Uint8Array, tasks: Task[], options?: PredictOptions): Promise<Prediction>;
}

/** The bytes are not an image the models can read: a permanent failure for this image. */
export class UndecodableImageError extends Error {
  override name = 'UndecodableImageError';
}

/** The service is down, slow or broken: worth retrying later. */
export class InferenceUnavailableError extends Error {
  override name = 'InferenceUnavailableError';
}

/** The region asked for lies outside the image. */
export class RegionOutsideImageError extends Error {
  override name = 'RegionOutsideImageError';
}
