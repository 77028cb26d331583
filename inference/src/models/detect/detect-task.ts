import type { DetectedObject, DetectVocabulary, ExternalDetections, PaletteColor, TaskResult, VocabularyType } from '@edge-image-search/contract/wire';
import { cropView, type ImageView } from '../../image/view.ts';
import type { Runtime } from '../../runtime/runtime.ts';
import type { Embedder } from '../embed/embedder.ts';
import type { TaskModel } from '../task-model.ts';
import { ApiError } from '../../errors.ts';
import { loadCenterNet } from './centernet.ts';
import { COCO_LABELS } from './coco-labels.ts';
import type { Detector } from './detector.ts';
import { loadHfDetector, loadHfParser } from './hf/hf-detector.ts';
import type { HfModelOptions, ModelLocation } from '../embed/hf/entry.ts';
import type { ModelFiles } from '../hub/model-files.ts';
import { labelMapFor, mappedTypes, type LabelMap } from './label-map.ts';
import { cropBoxWithMargin, DETECT_MIN_SCORE, keepDistinct, selectObjects, toViewPixels, type MappedObject } from './objects.ts';
import { ObjectAttributes } from './attributes.ts';
import { loadDefaultPrompts, promptsOf, type DefaultPrompts } from './prompts.ts';
import { loadMoveNet } from '../pose/movenet.ts';
import { parsedGarments, PERSON_LABEL, poseGarments, type GarmentFinder } from './worn-garments.ts';
import { MAX_DETECTED_OBJECTS } from '@edge-image-search/contract/wire';

export type DetectOptions = {
  /** The request's embedder (its `embed_model`, else the service's default), for each object's crop. */
  readonly embedder: Embedder;
  /** The palette of a view: each object's colours when the colors task is asked too, and its `color` attribute. */
  readonly palette: (crop: ImageView) => PaletteColor[];
  /** Whether the colors task is asked too: each object then carries its palette. */
  readonly withColors?: boolean;
  /**
   * Raw detections made by another detector (the Worker's Workers AI DETR), used instead of running this task's
   * detector: the task finishes them exactly as it finishes its own detector's.
   */
  readonly external?: ExternalDetections;
  /** The application's types, their prompts and attributes; the task's default vocabulary when absent. */
  readonly vocabulary?: DetectVocabulary;
};

/**
 * The detect task: a Detector, its label map to product types (for a closed-vocabulary detector) or the prompts of
 * each type (for an open-vocabulary one), and the pose model that finds what detected people wear; each object's crop
 * is embedded by the request's embedder and its attributes judged (attributes.ts). A request's vocabulary (the
 * application's types) narrows what is reported, and, for an open-vocabulary detector, says what to look for
 * (docs/decisions.md, "Product types and attributes").
 */
export class DetectTask implements TaskModel<[DetectOptions]> {
  readonly task = 'detect';
  readonly modelId: string;
  /** The types reported when a request names none: the label map's (and garments'), or the default prompts' types. */
  readonly types: string[];
  /** Whether any type named by prompts can be reported (an open-vocabulary detector), or only `types`. */
  readonly openVocabulary: boolean;
  readonly #detector: Detector | undefined;
  readonly #labelMap: LabelMap;
  readonly #garments: GarmentFinder | undefined;
  readonly #defaultPrompts: DefaultPrompts;
  readonly #attributes = new ObjectAttributes();

  /**
   * Without a detector, the task only finishes external detections (in COCO's vocabulary, as its people's
   * garments need); without a pose model, people's garments are not looked for.
   */
  constructor(detector: Detector | undefined, labelMap: LabelMap, defaultPrompts: DefaultPrompts, garments?: GarmentFinder) {
    this.#garments = garments;
    this.modelId = this.#modelIdWith(detector?.modelId ?? 'external');
    this.openVocabulary = detector?.openVocabulary ?? false;
    this.types = this.openVocabulary ? [...defaultPrompts.keys()].sort() : [...new Set([...mappedTypes(labelMap), ...(garments?.types ?? [])])].sort();
    this.#detector = detector;
    this.#labelMap = labelMap;
    this.#defaultPrompts = defaultPrompts;
  }

  /** A detector's id, with the garment finder's when garments are looked for: the id changes whenever outputs would. */
  #modelIdWith(detectorId: string): string {
    return this.#garments ? `${detectorId}+${this.#garments.modelId}` : detectorId;
  }

  /** The request's types: its vocabulary's that this task can report (all of them, open-vocabulary), else the defaults. */
  #typesOf(vocabulary: DetectVocabulary | undefined): VocabularyType[] {
    if (!vocabulary) return this.types.map((type) => ({ type }));
    return this.openVocabulary ? vocabulary.types : vocabulary.types.filter(({ type }) => this.types.includes(type));
  }

  /** The detections of the view and the label map that names their types: the prompts' own for an open vocabulary. */
  async #detections(view: ImageView, types: VocabularyType[], external: ExternalDetections | undefined) {
    if (external) return { detections: external.objects.map((detection) => ({ ...detection, box: toViewPixels(detection.box, view) })), labelMap: this.#labelMap };
    if (!this.#detector) {
      throw new ApiError(400, 'detections_required', 'This service loads no detector (INFERENCE_DETECTOR=none): send the "detections" field with the detect task.');
    }
    if (!this.openVocabulary) return { detections: await this.#detector.detect(view.pixels, DETECT_MIN_SCORE), labelMap: this.#labelMap };
    const labelMap = new Map(types.flatMap(({ type, prompts }) => promptsOf(type, prompts, this.#defaultPrompts).map((prompt) => [prompt, type] as const)));
    return { detections: await this.#detector.detect(view.pixels, DETECT_MIN_SCORE, [...labelMap.keys()]), labelMap };
  }

  async predict(view: ImageView, options: DetectOptions): Promise<TaskResult<'detect'>> {
    const { external } = options;
    const types = this.#typesOf(options.vocabulary);
    const { detections, labelMap } = await this.#detections(view, types, external);
    const garments = this.#garments ? await this.#garments.find(view, detections) : [];
    const wanted = new Map(types.map((entry) => [entry.type, entry]));
    const found = keepDistinct([...selectObjects(detections, labelMap, view), ...garments], MAX_DETECTED_OBJECTS).filter((object) => wanted.has(object.type));
    // Every crop's embedding is asked at once, so that a batching embedder runs them together.
    const objects = await Promise.all(found.map((object) => this.#finish(object, view, wanted.get(object.type)!, options)));
    return { model: external ? this.#modelIdWith(external.model) : this.modelId, types: types.map(({ type }) => type), objects };
  }

  /** An object as answered: its crop's embedding, its colours when asked, and its attributes. */
  async #finish(object: MappedObject, view: ImageView, type: VocabularyType, options: DetectOptions): Promise<DetectedObject> {
    const crop = cropView(view, cropBoxWithMargin(object.box, view));
    const embedding = await options.embedder.embed(crop.pixels);
    let colors: PaletteColor[] | undefined;
    const palette = (): PaletteColor[] => (colors ??= options.palette(cropView(view, object.box)));
    const attributes = await this.#attributes.judge(type, { embedding, palette }, options.embedder);
    return {
      ...object,
      score: roundScore(object.score),
      box: [...object.box],
      embedding: Array.from(embedding),
      ...(options.withColors ? { colors: palette() } : {}),
      ...(Object.keys(attributes).length > 0 ? { attributes } : {}),
    };
  }
}

function roundScore(score: number): number {
  return Math.round(score * 10_000) / 10_000;
}

/**
 * The built-in detectors INFERENCE_DETECTOR may name (beside a model in the Hugging Face layout: hf/hf-detector.ts);
 * `none` leaves detection to the caller (the Worker's Workers AI DETR).
 */
export const DETECTOR_NAMES = ['centernet', 'none'] as const;
export type DetectorName = (typeof DETECTOR_NAMES)[number];

/** The pose models INFERENCE_POSE may name (beside a clothes parser in the Hugging Face layout); `none` reports no garments. */
export const POSE_NAMES = ['movenet', 'none'] as const;
export type PoseName = (typeof POSE_NAMES)[number];

/** A model of an INFERENCE_DETECTOR or INFERENCE_POSE entry: built in (by name), or in the Hugging Face layout. */
type ModelChoice<Name extends string> = { readonly kind: 'built-in'; readonly name: Name } | { readonly kind: 'hf-layout'; readonly location: ModelLocation; readonly options: HfModelOptions };
type FilesOf = (location: ModelLocation) => Promise<ModelFiles>;

async function loadDetector(runtime: Runtime, choice: ModelChoice<DetectorName>, filesOf: FilesOf): Promise<Detector | undefined> {
  if (choice.kind === 'hf-layout') return loadHfDetector(runtime, await filesOf(choice.location), choice.options);
  return choice.name === 'centernet' ? loadCenterNet(runtime) : undefined;
}

/** What finds the garments people wear: the pose model, or a clothes parser with its label map (PARSER_LABELS, else the shipped one that fits). */
async function loadGarmentFinder(runtime: Runtime, choice: ModelChoice<PoseName>, parserLabelMapFile: string | undefined, filesOf: FilesOf): Promise<GarmentFinder | undefined> {
  if (choice.kind === 'built-in') return choice.name === 'movenet' ? poseGarments(await loadMoveNet(runtime)) : undefined;
  const parser = await loadHfParser(runtime, await filesOf(choice.location), choice.options);
  return parsedGarments(parser, labelMapFor(parserLabelMapFile, parser.labels, parser.modelId, 'PARSER_LABELS'));
}

/**
 * The detect task of the service's settings. A closed-vocabulary detector's labels are mapped by its label map
 * (DETECTOR_LABELS, else the shipped one that fits its labels), each key a label of the loaded model; an
 * open-vocabulary one is told the prompts instead. Garments are found on the people a detector reports.
 */
export async function loadDetectTask(
  runtime: Runtime,
  models: { detector: ModelChoice<DetectorName>; pose: ModelChoice<PoseName>; labelMapFile: string | undefined; parserLabelMapFile: string | undefined },
  filesOf: FilesOf,
): Promise<DetectTask> {
  const detector = await loadDetector(runtime, models.detector, filesOf);
  // External detections are expected in COCO's vocabulary, as DETR's are.
  const labels = detector?.labels ?? COCO_LABELS;
  // Garments are found on people: a detector that cannot report one gets no garment finder.
  const garments = labels.includes(PERSON_LABEL) ? await loadGarmentFinder(runtime, models.pose, models.parserLabelMapFile, filesOf) : undefined;
  const labelMap = detector?.openVocabulary ? new Map() : labelMapFor(models.labelMapFile, labels, detector?.modelId ?? 'external detections', 'DETECTOR_LABELS');
  return new DetectTask(detector, labelMap, loadDefaultPrompts(), garments);
}
