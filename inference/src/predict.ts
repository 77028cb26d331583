import type { Box, Prediction, PredictOptions, Task, TextPrediction } from '@edge-image-search/contract/wire';
import { ApiError } from './errors.ts';
import { decodeImage } from './image/decode.ts';
import { clampBox, cropView, wholeImage, type ImageView } from './image/view.ts';
import type { Embedder } from './models/embed/embedder.ts';
import type { ModelRegistry } from './models/registry.ts';
import type { ConcurrencyLimit } from './concurrency-limit.ts';
import { IMAGE_WORK } from './priority.ts';

/**
 * Decodes the image once, then runs every asked task on it, side by side, within
 * the limit of predictions in flight of the caller's class (priority.ts). With both detect and colors
 * asked, each detected object also gets the palette of its box. The request's embedder (`embedModel`, else the
 * default) serves `embed` and the objects' crops alike; one the service has not loaded is refused before any work.
 */
export async function predict<T extends Task>(
  bytes: Uint8Array,
  tasks: readonly T[],
  models: ModelRegistry,
  inFlight: ConcurrencyLimit,
  options: PredictOptions = {},
): Promise<Prediction<T>> {
  const embedder = models.embed.select(options.embedModel);
  return inFlight.run(() => runTasks(bytes, tasks, models, embedder, options));
}

/**
 * The text tower's unit vector of a text, by the request's embedder (`embedModel`, else the default), within the
 * caller's limit of predictions in flight. An embedder without a text tower answers 400 model_reads_no_text.
 */
export async function predictText(text: string, models: ModelRegistry, inFlight: ConcurrencyLimit, embedModel: string | undefined): Promise<TextPrediction> {
  const embedder = models.embed.select(embedModel);
  const { embedText } = embedder;
  if (!embedText) throw new ApiError(400, 'model_reads_no_text', `The embed model "${embedder.modelId}" reads no text: it has no text tower.`);
  const vector = await inFlight.run(() => embedText(text));
  return { embed: { model: embedder.modelId, dim: vector.length, vector: Array.from(vector) } };
}

async function runTasks<T extends Task>(
  bytes: Uint8Array,
  tasks: readonly T[],
  models: ModelRegistry,
  embedder: Embedder,
  { box, detections, vocabulary }: PredictOptions,
): Promise<Prediction<T>> {
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
  const palette = (crop: ImageView) => models.colors.palette(crop);
  const run = (task: Task): Promise<object> => {
    switch (task) {
      case 'embed':
        return embedder.predict(view);
      case 'detect':
        return models.detect.predict(view, { embedder, palette, withColors: (tasks as readonly Task[]).includes('colors'), external: detections, vocabulary });
      case 'colors':
        return models.colors.predict(view);
    }
  };
  // Side by side: one task's pre-processing (resizing, on libuv's threads) overlaps another's engine run.
  const results = await Promise.all(tasks.map(run));
  tasks.forEach((task, index) => (answer[task] = results[index]!));
  return answer as Prediction<T>;
}
