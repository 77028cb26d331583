import type { Box, Prediction, PredictOptions, Task } from './contract.ts';
import { ApiError } from './errors.ts';
import { decodeImage } from './image/decode.ts';
import { clampBox, cropView, wholeImage, type ImageView } from './image/view.ts';
import { ColorsTask } from './models/colors/colors-task.ts';
import { DetectTask } from './models/detect/detect-task.ts';
import type { ModelRegistry } from './models/registry.ts';
import type { ConcurrencyLimit } from './concurrency-limit.ts';
import { IMAGE_WORK } from './priority.ts';

/**
 * Decodes the image once, then runs every asked task on it, side by side, within
 * the limit of predictions in flight of the caller's class (priority.ts). With both detect and colors
 * asked, each detected object also gets the palette of its box.
 */
export async function predict<T extends Task>(
  bytes: Uint8Array,
  tasks: readonly T[],
  models: ModelRegistry,
  inFlight: ConcurrencyLimit,
  options: PredictOptions = {},
): Promise<Prediction<T>> {
  return inFlight.run(() => runTasks(bytes, tasks, models, options));
}

async function runTasks<T extends Task>(bytes: Uint8Array, tasks: readonly T[], models: ModelRegistry, { box, detections }: PredictOptions): Promise<Prediction<T>> {
  const image = await IMAGE_WORK.run(() => decodeImage(bytes));
  // Filled task by task: the tasks asked are the keys the answer's type promises.
  const answer: Record<string, object> = { image: { width: image.width, height: image.height, format: image.format } };
  let view = wholeImage(image);
  if (box) {
    const clamped = clampBox(box, image.width, image.height);
    if (!clamped) {
      throw new ApiError(400, 'bad_box', `The box ${box.join(',')} has no area inside the ${image.width}x${image.height} image.`);
    }
    answer.box = [...clamped] as Box;
    view = cropView(view, clamped);
  }
  const colors = (tasks as readonly Task[]).includes('colors') ? models.get('colors') : undefined;
  const objectColors = colors instanceof ColorsTask ? (crop: ImageView) => colors.palette(crop) : undefined;
  // Side by side: one task's pre-processing (resizing, on libuv's threads) overlaps another's engine run.
  const results = await Promise.all(
    tasks.map((task) => {
      const model = models.get(task);
      if (!model) throw new Error(`no model loaded for task ${task}`);
      return model instanceof DetectTask ? model.predict(view, { objectColors, external: detections }) : model.predict(view);
    }),
  );
  tasks.forEach((task, index) => (answer[task] = results[index]!));
  return answer as Prediction<T>;
}
