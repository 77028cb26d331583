import { cropView, type ImageView } from '../../image/view.ts';
import { GARMENT_LABELS, garmentBoxes } from '../pose/garments.ts';
import type { MoveNetPoseEstimator } from '../pose/movenet.ts';
import type { Detection, GarmentParser } from './detector.ts';
import { mappedTypes, type LabelMap } from './label-map.ts';
import { DETECT_MIN_SCORE, keepDistinct, selectObjects, toOriginalPixels, type MappedObject } from './objects.ts';

/** The label of a person in the detectors' vocabulary (COCO, for CenterNet and Workers AI's DETR alike). */
export const PERSON_LABEL = 'person';
/** People posed at most, the most confident first: each costs one pose run. */
const MAX_POSED_PEOPLE = 5;

/**
 * What finds the garments people wear: a pose model or a clothes parser, run on each detected person (the most
 * confident MAX_POSED_PEOPLE, overlapping ones suppressed); `types` are the garments' types it can report.
 */
export type GarmentFinder = {
  readonly modelId: string;
  readonly types: readonly string[];
  find(view: ImageView, detections: readonly Detection[]): Promise<MappedObject[]>;
};

/** The people among a view's detections that are looked at, in the view's pixels. */
const peopleOf = (detections: readonly Detection[]) =>
  keepDistinct(
    detections.filter((detection) => detection.label === PERSON_LABEL && detection.score >= DETECT_MIN_SCORE).map((person) => ({ ...person, type: PERSON_LABEL })),
    MAX_POSED_PEOPLE,
  );

/**
 * What the people in a view wear, by their pose: a person is no product, but their clothes are. Each person is posed,
 * and the garments its confident keypoints support become objects, labelled `person/<type>`, boxes in original pixels.
 * A garment's score is the person's times the mean score of the keypoints that place it: both the person and the
 * joints must be right.
 */
export function poseGarments(pose: MoveNetPoseEstimator): GarmentFinder {
  const find = async (view: ImageView, detections: readonly Detection[]): Promise<MappedObject[]> => {
    const { width, height } = view.pixels;
    const perPerson = await Promise.all(
      peopleOf(detections).map(async (person) => {
        const keypoints = await pose.estimate(view.pixels, person.box);
        return garmentBoxes(keypoints, person.box, width, height).flatMap((garment): MappedObject[] => {
          const box = toOriginalPixels(garment.box, view);
          const score = person.score * garment.confidence;
          return box && score >= DETECT_MIN_SCORE ? [{ type: garment.label, label: `${PERSON_LABEL}/${garment.label.toLowerCase()}`, score, box }] : [];
        });
      }),
    );
    return perPerson.flat();
  };
  return { modelId: pose.modelId, types: GARMENT_LABELS, find };
}

/**
 * What the people in a view wear, by a clothes parser run on each person's crop: each garment label's regions mapped
 * by the parser's label map, labelled `person/<label>`, boxes in original pixels; a garment's score is the person's
 * times its region's.
 */
export function parsedGarments(parser: GarmentParser, labelMap: LabelMap): GarmentFinder {
  const find = async (view: ImageView, detections: readonly Detection[]): Promise<MappedObject[]> => {
    const perPerson = await Promise.all(
      peopleOf(detections).map(async (person) => {
        const box = toOriginalPixels(person.box, view);
        if (!box) return [];
        const crop = cropView(view, box);
        const regions = await parser.parse(crop.pixels, DETECT_MIN_SCORE);
        const worn = regions.map((region) => ({ ...region, score: region.score * person.score }));
        return selectObjects(worn, labelMap, crop).map((garment) => ({ ...garment, label: `${PERSON_LABEL}/${garment.label}` }));
      }),
    );
    return perPerson.flat();
  };
  return { modelId: parser.modelId, types: mappedTypes(labelMap), find };
}
