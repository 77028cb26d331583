import type { ImageView } from '../../image/view.ts';
import { garmentBoxes } from '../pose/garments.ts';
import type { MoveNetPoseEstimator } from '../pose/movenet.ts';
import type { Detection } from './detector.ts';
import { DETECT_MIN_SCORE, keepDistinct, toOriginalPixels, type MappedObject } from './objects.ts';

/** The label of a person in the detectors' vocabulary (COCO, for CenterNet and Workers AI's DETR alike). */
export const PERSON_LABEL = 'person';
/** People posed at most, the most confident first: each costs one pose run. */
const MAX_POSED_PEOPLE = 5;

/**
 * What the people in a view wear: a person is no product, but their clothes are. Each detected person (the most
 * confident MAX_POSED_PEOPLE, overlapping ones suppressed) is posed, and the garments its confident keypoints
 * support become objects, labelled `person/<type>`, boxes in original pixels. A garment's score is the person's
 * times the mean score of the keypoints that place it: both the person and the joints must be right.
 */
export async function wornGarments(view: ImageView, detections: readonly Detection[], pose: MoveNetPoseEstimator): Promise<MappedObject[]> {
  const people = keepDistinct(
    detections.filter((detection) => detection.label === PERSON_LABEL && detection.score >= DETECT_MIN_SCORE).map((person) => ({ ...person, type: PERSON_LABEL })),
    MAX_POSED_PEOPLE,
  );
  const { width, height } = view.pixels;
  const perPerson = await Promise.all(
    people.map(async (person) => {
      const keypoints = await pose.estimate(view.pixels, person.box);
      return garmentBoxes(keypoints, person.box, width, height).flatMap((garment): MappedObject[] => {
        const box = toOriginalPixels(garment.box, view);
        const score = person.score * garment.confidence;
        return box && score >= DETECT_MIN_SCORE ? [{ type: garment.label, label: `${PERSON_LABEL}/${garment.label.toLowerCase()}`, score, box }] : [];
      });
    }),
  );
  return perPerson.flat();
}
