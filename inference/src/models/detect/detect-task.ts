import type { DetectedObject, ExternalDetections, PaletteColor, TaskResult } from '@edge-image-search/contract/wire';
import { cropView, type ImageView } from '../../image/view.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { Embedder } from '../embed/embedder.ts';
import type { TaskModel } from '../task-model.ts';
import { ApiError } from '../../errors.ts';
import { loadCenterNet } from './centernet.ts';
import { COCO_LABELS } from './coco-labels.ts';
import type { Detector } from './detector.ts';
import { loadLabelMap, mappedTypes, type LabelMap } from './label-map.ts';
import { cropBoxWithMargin, DETECT_MIN_SCORE, keepDistinct, selectObjects, toViewPixels } from './objects.ts';
import type { ProductType } from './product-types.ts';
import { loadMoveNet, type MoveNetPoseEstimator } from '../pose/movenet.ts';
import { PERSON_LABEL, wornGarments } from './worn-garments.ts';
import { GARMENT_LABELS } from '../pose/garments.ts';
import { MAX_DETECTED_OBJECTS } from '@edge-image-search/contract/wire';

export type DetectOptions = {
  /** The request's embedder (its `embed_model`, else the service's default), for each object's crop. */
  readonly embedder: Embedder;
  /** Given when the colors task is asked too: the palette of a view, run on each object's box. */
  readonly objectColors?: (crop: ImageView) => PaletteColor[];
  /**
   * Raw detections made by another detector (the Worker's Workers AI DETR), used instead of running this task's
   * detector: the task finishes them exactly as it finishes its own detector's.
   */
  readonly external?: ExternalDetections;
};

/**
 * The detect task: a Detector, its label map to product types, and the pose
 * model that finds what detected people wear; each object's crop is embedded
 * by the request's embedder (DetectOptions).
 */
export class DetectTask implements TaskModel<[DetectOptions]> {
  readonly task = 'detect';
  readonly modelId: string;
  readonly types: ProductType[];
  readonly #detector: Detector | undefined;
  readonly #labelMap: LabelMap;
  readonly #pose: MoveNetPoseEstimator | undefined;

  /**
   * Without a detector, the task only finishes external detections (in COCO's vocabulary, as its people's
   * garments need); without a pose model, people's garments are not looked for.
   */
  constructor(detector: Detector | undefined, labelMap: LabelMap, pose?: MoveNetPoseEstimator) {
    this.#pose = pose;
    this.modelId = this.#modelIdWith(detector?.modelId ?? 'external');
    this.types = [...new Set([...mappedTypes(labelMap), ...(pose ? GARMENT_LABELS : [])])].sort();
    this.#detector = detector;
    this.#labelMap = labelMap;
  }

  /** A detector's id, with the pose model's when garments are looked for: the id changes whenever outputs would. */
  #modelIdWith(detectorId: string): string {
    return this.#pose ? `${detectorId}+${this.#pose.modelId}` : detectorId;
  }

  async predict(view: ImageView, options: DetectOptions): Promise<TaskResult<'detect'>> {
    const { external } = options;
    if (!external && !this.#detector) {
      throw new ApiError(400, 'detections_required', 'This service loads no detector (INFERENCE_DETECTOR=none): send the "detections" field with the detect task.');
    }
    const detections = external
      ? external.objects.map((detection) => ({ ...detection, box: toViewPixels(detection.box, view) }))
      : await this.#detector!.detect(view.pixels, DETECT_MIN_SCORE);
    const garments = this.#pose ? await wornGarments(view, detections, this.#pose) : [];
    const found = keepDistinct([...selectObjects(detections, this.#labelMap, view), ...garments], MAX_DETECTED_OBJECTS);
    // Every crop's embedding is asked at once, so that a batching embedder runs them together.
    const objects = await Promise.all(
      found.map(async (object): Promise<DetectedObject> => {
        const crop = cropView(view, cropBoxWithMargin(object.box, view));
        const embedding = Array.from(await options.embedder.embed(crop.pixels));
        const result: DetectedObject = { ...object, score: roundScore(object.score), box: [...object.box], embedding };
        return options.objectColors ? { ...result, colors: options.objectColors(cropView(view, object.box)) } : result;
      }),
    );
    return { model: external ? this.#modelIdWith(external.model) : this.modelId, types: this.types, objects };
  }
}

function roundScore(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}

/** The detectors INFERENCE_DETECTOR may name; `none` leaves detection to the caller (the Worker's Workers AI DETR). */
export const DETECTOR_NAMES = ['centernet', 'none'] as const;
export type DetectorName = (typeof DETECTOR_NAMES)[number];

/** The pose models INFERENCE_POSE may name; `none` reports no garments. */
export const POSE_NAMES = ['movenet', 'none'] as const;
export type PoseName = (typeof POSE_NAMES)[number];

export async function loadDetectTask(
  runtime: Runtime,
  labelMapFile: string,
  models: { detector: DetectorName; pose: PoseName },
): Promise<DetectTask> {
  const detector = models.detector === 'centernet' ? await loadCenterNet(runtime) : undefined;
  // External detections are expected in COCO's vocabulary, as DETR's are.
  const labels = detector?.labels ?? COCO_LABELS;
  // Garments are found on people: a detector that cannot report one gets no pose model.
  const pose = models.pose === 'movenet' && labels.includes(PERSON_LABEL) ? await loadMoveNet(runtime) : undefined;
  return new DetectTask(detector, loadLabelMap(labelMapFile, labels), pose);
}
