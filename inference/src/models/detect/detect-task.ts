import type { DetectedObject, ExternalDetections, PaletteColor, TaskResult } from '../../contract.ts';
import { cropView, type ImageView } from '../../image/view.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { Embedder } from '../embed/embedder.ts';
import type { TaskModel } from '../task-model.ts';
import { ApiError } from '../../errors.ts';
import { loadCenterNet } from './centernet.ts';
import { COCO_LABELS } from './coco-labels.ts';
import type { Detector } from './detector.ts';
import { loadLabelMap, mappedTypes, type LabelMap } from './label-map.ts';
import { cropBoxWithMargin, DETECT_MIN_SCORE, selectObjects, toViewPixels } from './objects.ts';
import type { ProductType } from './product-types.ts';

export type DetectOptions = {
  /** Given when the colors task is asked too: the palette of a view, run on each object's box. */
  readonly objectColors?: (crop: ImageView) => PaletteColor[];
  /**
   * Raw detections made by another detector (the Worker's Workers AI DETR), used instead of running this task's
   * detector: the task finishes them exactly as it finishes its own detector's.
   */
  readonly external?: ExternalDetections;
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

  async predict(view: ImageView, options: DetectOptions = {}): Promise<TaskResult<'detect'>> {
    const { external } = options;
    if (!external && !this.#detector) {
      throw new ApiError(400, 'detections_required', 'This service loads no detector (INFERENCE_DETECTOR=none): send the "detections" field with the detect task.');
    }
    const detections = external
      ? external.objects.map((detection) => ({ ...detection, box: toViewPixels(detection.box, view) }))
      : await this.#detector!.detect(view.pixels, DETECT_MIN_SCORE);
    // Every crop's embedding is asked at once, so that a batching embedder runs them together.
    const objects = await Promise.all(
      selectObjects(detections, this.#labelMap, view).map(async (object): Promise<DetectedObject> => {
        const crop = cropView(view, cropBoxWithMargin(object.box, view));
        const embedding = Array.from(await this.#embedder.embed(crop.pixels));
        const result: DetectedObject = { ...object, score: roundScore(object.score), box: [...object.box], embedding };
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
