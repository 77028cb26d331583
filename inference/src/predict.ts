import { decodeImage } from './image/decode.ts';
import type { ModelRegistry } from './models/registry.ts';
import type { Task } from './models/task-model.ts';
import type { SerialQueue } from './serial-queue.ts';

export type PredictResponse = {
  image: { width: number; height: number; format: string };
  /** One key per asked task, holding that task's result. */
  [task: string]: object;
};

/** Decodes the image once, then runs every asked task on it, in order. */
export async function predict(
  bytes: Uint8Array,
  tasks: readonly Task[],
  models: ModelRegistry,
  inferenceQueue: SerialQueue,
): Promise<PredictResponse> {
  const image = await decodeImage(bytes);
  const response: PredictResponse = { image: { width: image.width, height: image.height, format: image.format } };
  await inferenceQueue.run(async () => {
    for (const task of tasks) {
      const model = models.get(task);
      if (!model) throw new Error(`no model loaded for task ${task}`);
      response[task] = await model.predict(image);
    }
  });
  return response;
}
