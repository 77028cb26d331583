/**
 * What a detected person wears, through the real models as the detect task
 * runs them (CenterNet's people, MoveNet's keypoints, worn-garments.ts), on a
 * photo `npm run eval` does not score: a head-and-shoulders portrait, the
 * framing of most fashion photos, whose hips are below the picture.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { before, test } from 'node:test';
import { PEOPLE_DIR } from '@edge-image-search/devtools/fixture-images';
import { decodeImage, type RgbPixels } from '../src/image/decode.ts';
import type { Box } from '../src/image/view.ts';
import { loadCenterNet } from '../src/models/detect/centernet.ts';
import type { Detection } from '../src/models/detect/detector.ts';
import { DETECT_MIN_SCORE, type MappedObject } from '../src/models/detect/objects.ts';
import { PERSON_LABEL, poseGarments } from '../src/models/detect/worn-garments.ts';
import { MIN_KEYPOINT_SCORE } from '../src/models/pose/garments.ts';
import { loadMoveNet, type Keypoint, type KeypointName } from '../src/models/pose/movenet.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';

/** 800x532: a man from the head to the top of his chest, in a jacket over a shirt (test/fixtures/README.md). */
const PORTRAIT = 'kphotoalbum_jesper_2.jpg';
/**
 * The `high` detection sensitivity keeps every object from the detector's own floor (src/search/detection.ts);
 * `low` keeps 0.35 and more.
 */
const HIGH_FLOOR = DETECT_MIN_SCORE;

let pixels: RgbPixels;
let person: Detection;
let keypoints: Map<KeypointName, Keypoint>;
let garments: MappedObject[];

before(async () => {
  // One intra-op thread, as in pose.test.ts: the tests leave the other core alone.
  const runtime = await createOnnxRuntime({ intraOpThreads: 1 });
  const [detector, pose] = await Promise.all([loadCenterNet(runtime), loadMoveNet(runtime)]);
  pixels = (await decodeImage(await readFile(path.join(PEOPLE_DIR, PORTRAIT)))).pixels;
  const detections = await detector.detect(pixels, DETECT_MIN_SCORE);
  person = detections.filter((detection) => detection.label === PERSON_LABEL).sort((a, b) => b.score - a.score)[0]!;
  keypoints = new Map((await pose.estimate(pixels, person.box)).map((keypoint) => [keypoint.name, keypoint]));
  garments = await poseGarments(pose).find({ pixels, box: [0, 0, pixels.width, pixels.height] }, detections);
});

test('a head-and-shoulders portrait: both shoulders seen, the hips below the picture', () => {
  const score = (name: KeypointName) => keypoints.get(name)!.score;
  assert.ok(person, 'no person detected');
  for (const name of ['nose', 'left_shoulder', 'right_shoulder'] as const) assert.ok(score(name) >= MIN_KEYPOINT_SCORE, `${name}: ${score(name)}`);
  for (const name of ['left_hip', 'right_hip'] as const) assert.ok(score(name) < MIN_KEYPOINT_SCORE, `${name}: ${score(name)}`);
});

test('a head-and-shoulders portrait wears a Top at `high`: from the shoulders to the bottom edge, inside the person', () => {
  const tops = garments.filter((garment) => garment.type === 'Top' && garment.score >= HIGH_FLOOR);
  assert.equal(tops.length, 1, JSON.stringify(garments));
  const [x1, y1, x2, y2] = tops[0]!.box as Box;
  const [left, right] = [keypoints.get('right_shoulder')!, keypoints.get('left_shoulder')!];
  const shoulderWidth = Math.hypot(left.x - right.x, left.y - right.y);
  const shoulderLine = Math.min(left.y, right.y);
  // Starts a little above the shoulders (the collar), below the face.
  assert.ok(y1 <= shoulderLine && shoulderLine - y1 <= 0.25 * shoulderWidth, `top edge ${y1}, shoulders at ${shoulderLine}`);
  assert.ok(y1 > keypoints.get('nose')!.y, `top edge ${y1} above the nose`);
  // Ends where the person does: the person's box, cut by the picture's bottom edge (CenterNet stops a few pixels short).
  assert.equal(y2, Math.min(pixels.height, Math.floor(person.box[3])));
  assert.ok(pixels.height - y2 <= 0.02 * pixels.height, `bottom edge ${y2} of ${pixels.height}`);
  // The torso's width, not the picture's: around the shoulders, inside the image's sides.
  const between = (left.x + right.x) / 2;
  assert.ok(x1 < right.x && left.x < x2, `${x1}-${x2} misses the shoulders ${right.x}-${left.x}`);
  assert.ok(x1 < between && between < x2);
  assert.ok(x1 > 0 && x2 < pixels.width && x2 - x1 < 0.9 * pixels.width, `${x1}-${x2} of ${pixels.width}`);
});
