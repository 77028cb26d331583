import { DETR_MODEL, type WorkersAiBinding } from '../../src/ports/inference/workers-ai-detection';

/** One object in DETR's documented output format on Workers AI. */
export type DetrObject = { score: number; label: string; box: { xmin: number; ymin: number; xmax: number; ymax: number } };

/**
 * An in-test stand-in for the Workers AI binding (there is no local simulator), for `@cf/facebook/detr-resnet-50`
 * only. It checks the input as the documented schema has it (`{ image: number[] }`, bytes 0-255, an unknown model
 * refused) and answers in DETR's output format, whatever `detect` makes of the image bytes.
 */
export class FakeWorkersAi implements WorkersAiBinding {
  /** The image bytes of every accepted call, in order. */
  readonly images: Uint8Array[] = [];
  readonly #detect: (image: Uint8Array) => Promise<unknown>;

  constructor(detect: (image: Uint8Array) => Promise<unknown>) {
    this.#detect = detect;
  }

  async run(model: string, inputs: { image: number[] }): Promise<unknown> {
    if (model !== DETR_MODEL) throw new Error(`5007: No such model ${model} or task`);
    const { image } = inputs ?? {};
    if (!Array.isArray(image) || image.length === 0 || !image.every((byte) => Number.isInteger(byte) && byte >= 0 && byte <= 255)) {
      throw new Error('3010: Invalid or incomplete input for the model: image must be an array of bytes');
    }
    const bytes = Uint8Array.from(image);
    this.images.push(bytes);
    return this.#detect(bytes);
  }
}

/**
 * Real detections for the fake: the bundled service's COCO detector on the same bytes, rewritten in DETR's format
 * (the two share COCO's label names), so that a test sees objects really in the image.
 */
export function serviceDetections(inferenceUrl: string, secret: string | undefined): (image: Uint8Array) => Promise<DetrObject[]> {
  return async (image) => {
    const form = new FormData();
    form.set('image', new Blob([image]), 'image');
    form.set('tasks', 'detect');
    const response = await fetch(new URL('/predict', inferenceUrl), { method: 'POST', body: form, headers: secret ? { authorization: `Bearer ${secret}` } : {} });
    if (!response.ok) throw new Error(`3016: the model could not read the image (HTTP ${response.status})`);
    const { detect } = await response.json<{ detect: { objects: { label: string; score: number; box: number[] }[] } }>();
    return detect.objects.map(({ label, score, box: [xmin, ymin, xmax, ymax] }) => ({ label, score, box: { xmin: xmin!, ymin: ymin!, xmax: xmax!, ymax: ymax! } }));
  };
}
