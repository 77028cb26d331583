import { cropView, type ImageView } from '../../image/view.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { PaletteColor } from '../colors/palette.ts';
import type { Embedder } from '../embed/embedder.ts';
import type { TaskModel } from '../task-model.ts';
import { ApiError } from '../../errors.ts';
import { loadCenterNet } from './centernet.ts';
import { COCO_LABELS } from './coco-labels.ts';
import type { Detection, Detector } from './detector.ts';
import { loadLabelMap, mappedTypes, type LabelMap } from './label-map.ts';
import { cropBoxWithMargin, DETECT_MIN_SCORE, selectObjects, toViewPixels } from './objects.ts';
import type { ProductType } from './product-types.ts';

export type DetectedObjectResult = {
  readonly type: ProductType;
  /** The detector's own label, e.g. "handbag". */
  readonly label: string;
  readonly score: number;
  /** [x1, y1, x2, y2], integers in original (displayed) pixels. */
  readonly box: [number, number, number, number];
  /** The embed model's vector for the object's crop (box plus margin): comparable with whole-image embeddings. */
  readonly embedding: number[];
  /** The dominant colours of the object's box (no margin), when the colors task was asked too. */
  readonly colors?: PaletteColor[];
};

/**
 * Raw detections made by another detector (the Worker's Workers AI DETR), boxes in original pixels, labels in its
 * own vocabulary: the task finishes them exactly as it finishes its own detector's.
 */
export type ExternalDetections = {
  /** Names the detector that made them; reported as the result's `model`. */
  readonly model: string;
  readonly objects: readonly Detection[];
};

export type DetectOptions = {
  /** Given when the colors task is asked too: the palette of a view, run on each object's box. */
  readonly objectColors?: (crop: ImageView) => PaletteColor[];
  /** Used instead of running this task's detector. */
  readonly external?: ExternalDetections;
};

export type DetectResult = {
  readonly model: string;
  /** Every type this detector can report: the label map's distinct values. */
  readonly types: ProductType[];
  /** Best first. */
  readonly objects: DetectedObjectResult[];
};

/**
 * The detect task: a Detector, its label map to product types, and the
 * embedder for each object's crop.
 */
export class DetectTask implements TaskModel {
  readonly task = 'detect';
  readonly modelId: string;
  readonly types: ProductType[];
  readonly #detector: Detector | undefined;
  readonly #labelMap: LabelMap;
  readonly #embedder: Embedder;

  /** Without a detector, the task only finishes external detections. */
  constructor(detector: Detector | undefined, labelMap: LabelMap, embedder: Embedder) {
    this.modelId = detector?.modelId ?? 'external';
    this.types = mappedTypes(labelMap);
    this.#detector = detector;
    this.#labelMap = labelMap;
    this.#embedder = embedder;
  }

  async predict(view: ImageView, options: DetectOptions = {}): Promise<DetectResult> {
    const { external } = options;
    if (!external && !this.#detector) {
      throw new ApiError(400, 'detections_required', 'This service loads no detector (INFERENCE_DETECTOR=none): send the "detections" field with the detect task.');
    }
    const detections = external
      ? external.objects.map((detection) => ({ ...detection, box: toViewPixels(detection.box, view) }))
      : await this.#detector!.detect(view.pixels, DETECT_MIN_SCORE);
    // Every crop's embedding is asked at once, so that a batching embedder runs them together.
    const objects = await Promise.all(
      selectObjects(detections, this.#labelMap, view).map(async (object): Promise<DetectedObjectResult> => {
        const crop = cropView(view, cropBoxWithMargin(object.box, view));
        const embedding = Array.from(await this.#embedder.embed(crop.pixels));
        const result: DetectedObjectResult = { ...object, score: roundScore(object.score), box: [...object.box], embedding };
        return options.objectColors ? { ...result, colors: options.objectColors(cropView(view, object.box)) } : result;
      }),
    );
    return { model: external?.model ?? this.modelId, types: this.types, objects };
  }
}

function roundScore(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}

/** The detectors INFERENCE_DETECTOR may name; `none` leaves detection to the caller (the Worker's Workers AI DETR). */
export const DETECTOR_NAMES = ['centernet', 'none'] as const;
export type DetectorName = (typeof DETECTOR_NAMES)[number];

export async function loadDetectTask(runtime: Runtime, embedder: Embedder, labelMapFile: string, detectorName: DetectorName): Promise<DetectTask> {
  const detector = detectorName === 'centernet' ? await loadCenterNet(runtime) : undefined;
  // External detections are expected in COCO's vocabulary, as DETR's are.
  return new DetectTask(detector, loadLabelMap(labelMapFile, detector?.labels ?? COCO_LABELS), embedder);
}
