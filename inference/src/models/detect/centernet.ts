import type { RgbPixels } from '../../image/decode.ts';
import { resizeRgb } from '../../image/resize.ts';
import type { Float32Tensor, InferenceSession, ModelSource, Runtime } from '../../runtime/runtime.ts';
import { humanModelFile } from '../human-models.ts';
import { greyPixels, onBlackSquare } from '../model-input.ts';
import { COCO_LABELS } from './coco-labels.ts';
import type { Detection, Detector } from './detector.ts';

/**
 * CenterNet with a MobileNetV3 backbone trained on COCO (80 classes), the
 * "centernet" model @vladmandic/human ships (from 610265158/mobilenetv3_centernet),
 * read from that package's models/ folder on disk.
 *
 * Facts checked against human's src/object/centernet.ts and the graph itself:
 * - input `tower_0/images` [1, 512, 512, 3]: RGB as float 0-255 (the training
 *   code's /255 is folded into the first convolution; 0-1 input finds nothing);
 * - output `tower_0/detections` [1, 100, 6]: the 100 best heat-map peaks
 *   (3x3 max-pool NMS per class inside the graph) as x1, y1, x2, y2 in input
 *   pixels (0-512; may reach a little outside), score (sigmoid, 0-1), class
 *   (0-based index into COCO_LABELS: 0 = person).
 * The graph takes a batch of one: its decoding tail reshapes to fixed sizes.
 */
const OUTPUT = 'tower_0/detections';

export const CENTERNET_SOURCE: ModelSource = {
  format: 'tfjs-graph',
  modelJson: humanModelFile('centernet.json'),
  name: 'centernet',
  outputs: [OUTPUT],
};

export const CENTERNET_INPUT_SIZE = 512;
const VALUES_PER_DETECTION = 6;

/**
 * Names the graph and the preprocessing (aspect-preserving resize into the
 * top-left of a black 512x512 square).
 */
export const CENTERNET_MODEL_ID = 'centernet_mobilenetv3_coco80_512-human3.3.6-letterbox-v1';

/**
 * Preprocessing: the picture is scaled to fit 512x512 with its aspect ratio
 * kept and placed top-left on black, as the model was trained (aspect-kept
 * resize, zero padding); stretching it to a square, as human does, found
 * fewer and weaker objects on the shared test images (a cat read as a dog).
 */
export class CenterNetDetector implements Detector {
  readonly modelId = CENTERNET_MODEL_ID;
  readonly labels: readonly string[] = COCO_LABELS;
  readonly openVocabulary = false;
  readonly #session: InferenceSession;

  constructor(session: InferenceSession) {
    this.#session = session;
  }

  async detect(pixels: RgbPixels, minScore: number): Promise<Detection[]> {
    const { input, scaleX, scaleY } = await toCenterNetInput(pixels);
    const output = (await this.#session.run(input, [OUTPUT])).get(OUTPUT)!;
    const detections: Detection[] = [];
    for (let offset = 0; offset + VALUES_PER_DETECTION <= output.data.length; offset += VALUES_PER_DETECTION) {
      const [x1, y1, x2, y2, score, classIndex] = output.data.subarray(offset, offset + VALUES_PER_DETECTION);
      const label = COCO_LABELS[classIndex!];
      if (!(score! >= minScore) || label === undefined) continue;
      detections.push({ label, score: score!, box: [x1! / scaleX, y1! / scaleY, x2! / scaleX, y2! / scaleY] });
    }
    return detections;
  }
}

/** The letterboxed input and the factors from the pixels' coordinates to the input's. */
export async function toCenterNetInput(pixels: RgbPixels): Promise<{ input: Float32Tensor; scaleX: number; scaleY: number }> {
  const size = CENTERNET_INPUT_SIZE;
  const scale = size / Math.max(pixels.width, pixels.height);
  const width = Math.min(size, Math.max(1, Math.round(pixels.width * scale)));
  const height = Math.min(size, Math.max(1, Math.round(pixels.height * scale)));
  // Top-left: black padding right and below.
  const input = onBlackSquare(await resizeRgb(pixels, width, height, 'fill'), size);
  return { input, scaleX: width / pixels.width, scaleY: height / pixels.height };
}

export async function loadCenterNet(runtime: Runtime): Promise<CenterNetDetector> {
  const detector = new CenterNetDetector(await runtime.load(CENTERNET_SOURCE));
  // The first run initialises every kernel; pay for that before serving.
  await detector.detect(greyPixels(CENTERNET_INPUT_SIZE), 1);
  return detector;
}
