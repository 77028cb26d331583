import type { RgbPixels } from '../../image/decode.ts';
import { humanModelFile } from '../human-models.ts';
import { greyPixels, onBlackSquare } from '../model-input.ts';
import { resizeRgb } from '../../image/resize.ts';
import { clamp, cropPixels, type Box } from '../../image/view.ts';
import type { Float32Tensor, InferenceSession, ModelSource, Runtime } from '../../runtime/runtime.ts';

/**
 * MoveNet SinglePose Lightning (v4, TF Hub), as @vladmandic/human ships it,
 * read from that package's models/ folder on disk.
 *
 * Facts checked against the graph:
 * - input `input` [1, 192, 192, 3]: RGB 0-255 as int32 (the runtimes cast
 *   their float32 input to it);
 * - output `Identity:0` [1, 1, 17, 3]: per keypoint (KEYPOINT_NAMES' order)
 *   y, x normalised to the input (0-1) and a score (0-1).
 * The graph takes a batch of one and finds one person: the one nearest the
 * input's centre, so the input is a square crop around a person's box.
 */
const OUTPUT = 'Identity:0';

export const MOVENET_SOURCE: ModelSource = {
  format: 'tfjs-graph',
  modelJson: humanModelFile('movenet-lightning.json'),
  name: 'movenet-lightning',
  outputs: [OUTPUT],
};

export const MOVENET_INPUT_SIZE = 192;

/** Names the graph and the preprocessing (square crop around the person box, 15 % margin, zero padding). */
export const MOVENET_MODEL_ID = 'movenet_singlepose_lightning_v4-human3.3.6-square-crop-v1';

/** The 17 COCO keypoints, in the model's output order. */
export const KEYPOINT_NAMES = [
  'nose',
  'left_eye',
  'right_eye',
  'left_ear',
  'right_ear',
  'left_shoulder',
  'right_shoulder',
  'left_elbow',
  'right_elbow',
  'left_wrist',
  'right_wrist',
  'left_hip',
  'right_hip',
  'left_knee',
  'right_knee',
  'left_ankle',
  'right_ankle',
] as const;
export type KeypointName = (typeof KEYPOINT_NAMES)[number];

/** A body keypoint in the pixels' coordinates (pixel edges, as Box; fractional). "left" is the person's left. */
export type Keypoint = {
  readonly name: KeypointName;
  readonly x: number;
  readonly y: number;
  /** Confidence in [0, 1]. */
  readonly score: number;
};

/**
 * Share of the box's longer side added on every side of the crop: MoveNet was
 * trained on people filling most of the frame, with some room around them
 * (TF Hub's cropping example keeps a margin too); a tight detector box would
 * cut off wrists and feet.
 */
const CROP_MARGIN = 0.15;

/**
 * One person's pose: the square around the person's box (the shorter side
 * padded so that the body keeps its proportions, then CROP_MARGIN added), the
 * parts outside the image black, resized to 192x192.
 */
export class MoveNetPoseEstimator {
  readonly modelId = MOVENET_MODEL_ID;
  readonly #session: InferenceSession;

  constructor(session: InferenceSession) {
    this.#session = session;
  }

  async estimate(pixels: RgbPixels, box: Box): Promise<Keypoint[]> {
    const { input, toPixels } = await toMoveNetInput(pixels, box);
    const output = (await this.#session.run(input, [OUTPUT])).get(OUTPUT)!;
    return KEYPOINT_NAMES.map((name, i) => {
      const [y, x, score] = output.data.subarray(i * 3, i * 3 + 3);
      return { name, ...toPixels(x!, y!), score: score! };
    });
  }
}

export async function loadMoveNet(runtime: Runtime): Promise<MoveNetPoseEstimator> {
  const pose = new MoveNetPoseEstimator(await runtime.load(MOVENET_SOURCE));
  // The first run initialises every kernel; pay for that before serving.
  const size = MOVENET_INPUT_SIZE;
  await pose.estimate(greyPixels(size), [0, 0, size, size]);
  return pose;
}

/** The crop as MoveNet's input, and the map from the model's normalised coordinates back to the pixels'. */
export async function toMoveNetInput(
  pixels: RgbPixels,
  box: Box,
): Promise<{ input: Float32Tensor; toPixels: (x: number, y: number) => { x: number; y: number } }> {
  const size = MOVENET_INPUT_SIZE;
  const side = Math.max(box[2] - box[0], box[3] - box[1], 1) * (1 + 2 * CROP_MARGIN);
  const square = { left: (box[0] + box[2] - side) / 2, top: (box[1] + box[3] - side) / 2 };
  const scale = size / side;
  // The part of the square inside the image, in whole pixels (at least one).
  const left = clamp(Math.floor(square.left), 0, pixels.width - 1);
  const top = clamp(Math.floor(square.top), 0, pixels.height - 1);
  const right = clamp(Math.ceil(square.left + side), left + 1, pixels.width);
  const bottom = clamp(Math.ceil(square.top + side), top + 1, pixels.height);
  // Where that part lands in the input; as in centernet.ts, it alone is resized and the rest stays black.
  const offsetX = clamp(Math.round((left - square.left) * scale), 0, size - 1);
  const offsetY = clamp(Math.round((top - square.top) * scale), 0, size - 1);
  const width = clamp(Math.round((right - left) * scale), 1, size - offsetX);
  const height = clamp(Math.round((bottom - top) * scale), 1, size - offsetY);
  const resized = await resizeRgb(cropPixels(pixels, left, top, right - left, bottom - top), width, height, 'fill');
  // The factors of the resize actually done, rounding included.
  const scaleX = width / (right - left);
  const scaleY = height / (bottom - top);
  return {
    input: onBlackSquare(resized, size, offsetX, offsetY),
    toPixels: (x, y) => ({ x: left + (x * size - offsetX) / scaleX, y: top + (y * size - offsetY) / scaleY }),
  };
}
