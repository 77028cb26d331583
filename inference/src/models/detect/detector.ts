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
 * An object detector: pixels in, labelled boxes out. The detect task maps the labels to product types
 * (label-map.ts), so a detector trained on other classes drops in with its own map. A closed-vocabulary detector
 * (COCO's CenterNet, the DETR family) reports its own classes; an open-vocabulary one (OWL-ViT, OWLv2) finds what
 * the texts it is given name, and each detection's label is the prompt that found it.
 */
export interface Detector {
  /** Names the network and its pre- and post-processing; changes whenever outputs would. */
  readonly modelId: string;
  /** Every label detect() can return: the model's classes; none for an open-vocabulary detector, whose labels are its prompts. */
  readonly labels: readonly string[];
  /** Whether the detector finds what a text names: detect() then takes the prompts. */
  readonly openVocabulary: boolean;
  /** Detections with score >= minScore, any order, possibly overlapping; `prompts` for an open-vocabulary detector. */
  detect(pixels: RgbPixels, minScore: number, prompts?: readonly string[]): Promise<Detection[]>;
}

/**
 * A semantic segmenter of a person into garments (a clothes parser, e.g. SegFormer trained on clothes): each label's
 * connected regions, with their boxes, become detections in its own vocabulary (`labels`), mapped to product types
 * by a label map as a detector's are.
 */
export interface GarmentParser {
  readonly modelId: string;
  /** The segmenter's classes (`id2label`), background included. */
  readonly labels: readonly string[];
  /** The regions found on the pixels (a person's crop, or the whole image), score >= minScore. */
  parse(pixels: RgbPixels, minScore: number): Promise<Detection[]>;
}
