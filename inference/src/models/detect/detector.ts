import type { RgbPixels } from '../../image/decode.ts';
import type { Box } from '../../image/view.ts';

/** One raw detection, in the detector's own vocabulary. */
export type Detection = {
  /** The model's class name, e.g. "handbag". */
  readonly label: string;
  /** Confidence in [0, 1]. */
  readonly score: number;
  /** [x1, y1, x2, y2] in the input pixels' coordinates (edges; fractional; may reach past the image). */
  readonly box: Box;
};

/**
 * An object detector: pixels in, labelled boxes out. The detect task maps
 * the labels to product types (label-map.ts), so a detector trained on other
 * classes drops in with its own map.
 */
export interface Detector {
  /** Names the network and its pre- and post-processing; changes whenever outputs would. */
  readonly modelId: string;
  /** Every label detect() can return. */
  readonly labels: readonly string[];
  /** Detections with score >= minScore, any order, possibly overlapping. */
  detect(pixels: RgbPixels, minScore: number): Promise<Detection[]>;
}
