import { retryUnavailable } from './retry';
import { z } from 'zod';
import { InferenceUnavailableError, type Inference, type RawDetection, type Task } from './types';

/** Workers AI's object detector: DETR with a ResNet-50 backbone, trained on COCO 2017. */
export const DETR_MODEL = '@cf/facebook/detr-resnet-50';

/**
 * Images larger than this go to the service's own detector instead: Workers AI takes the image as an array of
 * numbers, several bytes of Worker memory per image byte, and a Worker has 128 MB.
 */
export const WORKERS_AI_MAX_IMAGE_BYTES = 4 * 1024 * 1024;

/** The slice of the `Ai` binding this adapter calls; the in-test fake implements it too. */
export interface WorkersAiBinding {
  run(model: typeof DETR_MODEL, inputs: { image: number[] }): Promise<unknown>;
}

/**
 * Detection on Workers AI, the rest on the inference service: DETR finds the objects, then one call to the service
 * embeds and colours their crops and maps DETR's COCO labels to product types with the same label map, score floor
 * and suppression as the service's own detector (`inference/src/models/detect/objects.ts`). Calls without `detect`,
 * and texts, go straight to the service.
 */
export function withWorkersAiDetection(
  service: Inference,
  ai: WorkersAiBinding,
  { retries, maxImageBytes = WORKERS_AI_MAX_IMAGE_BYTES }: { retries: number; maxImageBytes?: number },
): Inference {
  return {
    embedText: (text, options) => service.embedText(text, options),
    // DETR's COCO labels are mapped by the service's label map: its types are the ones reported.
    detector: () => service.detector(),
    async predict(image, tasks, options = {}) {
      if (!(tasks as readonly Task[]).includes('detect') || image.byteLength > maxImageBytes) return service.predict(image, tasks, options);
      const objects = await retryUnavailable(retries, () => detectWithDetr(ai, image));
      return service.predict(image, tasks, { ...options, detections: { model: DETR_MODEL, objects } });
    },
  };
}

async function detectWithDetr(ai: WorkersAiBinding, image: Uint8Array): Promise<RawDetection[]> {
  let output: unknown;
  try {
    output = await ai.run(DETR_MODEL, { image: Array.from(image) });
  } catch (error) {
    throw new InferenceUnavailableError(`Workers AI detection failed: ${String(error)}`);
  }
  const detections = parseDetrOutput(output);
  if (!detections) throw new InferenceUnavailableError('Workers AI detection answered an unexpected body');
  return detections;
}

/** DETR's documented output, boxes in the image's pixels; zod's numbers are finite. */
const detrOutput = z.array(
  z.object({
    score: z.number(),
    label: z.string(),
    box: z.object({ xmin: z.number(), ymin: z.number(), xmax: z.number(), ymax: z.number() }),
  }),
);

/** Null when the body has any other shape than DETR's: a partial answer is not trusted. */
export function parseDetrOutput(output: unknown): RawDetection[] | null {
  const parsed = detrOutput.safeParse(output);
  if (!parsed.success) return null;
  return parsed.data.map(({ score, label, box }) => ({ label, score, box: [box.xmin, box.ymin, box.xmax, box.ymax] }));
}
