import { ApiError } from './errors.ts';
import { decodeImage } from './image/decode.ts';
import { clampBox, cropView, wholeImage, type Box, type ImageView } from './image/view.ts';
import { ColorsTask } from './models/colors/colors-task.ts';
import { DetectTask, type ExternalDetections } from './models/detect/detect-task.ts';
import type { ModelRegistry } from './models/registry.ts';
import type { Task } from './models/task-model.ts';
import type { ConcurrencyLimit } from './concurrency-limit.ts';

export type PredictResponse = {
  image: { width: number; height: number; format: string };
  /** The request's box clamped to the image, when one was given. */
  box?: Box;
  /** One key per asked task, holding that task's result. */
  [task: string]: object | undefined;
};

export type PredictOptions = {
  /** Original pixels: the tasks run on that part of the image only; their coordinates stay the original's. */
  readonly box?: Box;
  /** Detections made elsewhere, finished by the detect task instead of running its detector. */
  readonly detections?: ExternalDetections;
};

/**
 * Decodes the image once, then runs every asked task on it, in order, within
 * the service's limit of predictions in flight. With both detect and colors
 * asked, each detected object also gets the palette of its box.
 */
export async function predict(
  bytes: Uint8Array,
  tasks: readonly Task[],
  models: ModelRegistry,
  inFlight: ConcurrencyLimit,
  { box, detections }: PredictOptions = {},
): Promise<PredictResponse> {
  return inFlight.run(() => runTasks(bytes, tasks, models, { box, detections }));
}

async function runTasks(bytes: Uint8Array, tasks: readonly Task[], models: ModelRegistry, { box, detections }: PredictOptions): Promise<PredictResponse> {
  const image = await decodeImage(bytes);
  const response: PredictResponse = { image: { width: image.width, height: image.height, format: image.format } };
  let view = wholeImage(image);
  if (box) {
    const clamped = clampBox(box, image.width, image.height);
    if (!clamped) {
      throw new ApiError(400, 'bad_box', `The box ${box.join(',')} has no area inside the ${image.width}x${image.height} image.`);
    }
    response.box = clamped;
    view = cropView(view, clamped);
  }
  const colors = tasks.includes('colors') ? models.get('colors') : undefined;
  const objectColors = colors instanceof ColorsTask ? (crop: ImageView) => colors.palette(crop) : undefined;
  for (const task of tasks) {
    const model = models.get(task);
    if (!model) throw new Error(`no model loaded for task ${task}`);
    response[task] = model instanceof DetectTask ? await model.predict(view, { objectColors, external: detections }) : await model.predict(view);
  }
  return response;
}
