import path from 'node:path';
import type { ModelSource, Runtime } from '../runtime/runtime.ts';
import { loadColorsTask } from './colors/colors-task.ts';
import { CENTERNET_SOURCE } from './detect/centernet.ts';
import { loadDetectTask } from './detect/detect-task.ts';
import { DEFAULT_LABEL_MAP_FILE } from './detect/label-map.ts';
import { loadEmbedder } from './embed/embedder.ts';
import { MOBILENET_V2_SOURCE } from './embed/mobilenet-v2.ts';
import type { Task, TaskModel } from './task-model.ts';

export type ModelRegistry = ReadonlyMap<Task, TaskModel>;

/** Every graph the tasks load; scripts/convert-models.ts converts these for the ONNX runtime. */
export const MODEL_SOURCES: readonly ModelSource[] = [MOBILENET_V2_SOURCE, CENTERNET_SOURCE];

/**
 * Loads every task's model once on the given runtime (server.ts picks it from
 * INFERENCE_RUNTIME); the server keeps them for its lifetime.
 * DETECTOR_LABELS names the detector's label map (default config/detector-labels.json;
 * a relative path is taken from the working directory).
 */
export async function loadModels(runtime: Runtime): Promise<ModelRegistry> {
  const embedder = await loadEmbedder(runtime);
  const labelMapFile = process.env.DETECTOR_LABELS ? path.resolve(process.env.DETECTOR_LABELS) : DEFAULT_LABEL_MAP_FILE;
  const detect = await loadDetectTask(runtime, embedder, labelMapFile);
  return new Map<Task, TaskModel>([
    ['embed', embedder],
    ['detect', detect],
    ['colors', loadColorsTask()],
  ]);
}
