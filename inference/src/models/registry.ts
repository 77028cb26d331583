import path from 'node:path';
import { PriorityGate } from '../priority.ts';
import { BatchedSession } from '../runtime/batched-session.ts';
import type { InferenceSession, ModelSource, Runtime } from '../runtime/runtime.ts';
import { loadColorsTask, type ColorsTask } from './colors/colors-task.ts';
import { CENTERNET_SOURCE } from './detect/centernet.ts';
import { DETECTOR_NAMES, loadDetectTask, POSE_NAMES, type DetectorName, type DetectTask, type PoseName } from './detect/detect-task.ts';
import { DEFAULT_LABEL_MAP_FILE } from './detect/label-map.ts';
import { loadEmbedder, type Embedder } from './embed/embedder.ts';
import { EmbedderSet } from './embed/embedder-set.ts';
import { EMBEDDER_NAMES, EMBEDDER_SPECS, type EmbedderName } from './embed/embedder-specs.ts';
import { MOVENET_SOURCE } from './pose/movenet.ts';
import { choiceListSetting, choiceSetting, integerSetting } from '../settings.ts';

/** The loaded models by task: the embedders (a request picks one), the detect task, the colors task. */
export type ModelRegistry = {
  readonly embed: EmbedderSet;
  readonly detect: DetectTask;
  readonly colors: ColorsTask;
};

/** Every graph the tasks load; scripts/convert-models.ts converts these for the ONNX runtime. */
export const MODEL_SOURCES: readonly ModelSource[] = [
  ...new Set(Object.values(EMBEDDER_SPECS).flatMap((spec) => spec.networks.map((network) => network.source))),
  CENTERNET_SOURCE,
  MOVENET_SOURCE,
];

/** Which models the service loads, from its environment (inference/README.md, Run). */
export type ModelSet = {
  /** INFERENCE_EMBED_MODELS: the embedders loaded, the first the default (default `mobilenet-v2,fused`). */
  readonly embedders: readonly [EmbedderName, ...EmbedderName[]];
  /** INFERENCE_DETECTOR: `centernet` (default) or `none`. */
  readonly detector: DetectorName;
  /** INFERENCE_POSE: `movenet` (default: what detected people wear) or `none`. */
  readonly pose: PoseName;
  /** DETECTOR_LABELS: the detector's label map (a relative path is taken from the working directory). */
  readonly labelMapFile: string;
  /** INFERENCE_MAX_BATCH: embeddings per engine run at most (default 8). */
  readonly maxBatch: number;
  /**
   * INFERENCE_MAX_BULK_BATCH: embeddings per engine run of bulk work (default 4, one image's views). On ONNX a search
   * does not wait for a bulk run (it has an engine thread of its own); on tfjs-wasm it waits for at most one. While
   * searches are under way, bulk goes one run at a time (priority.ts): whole images' views then take fewer turns.
   */
  readonly maxBulkBatch: number;
};

export function modelSetFromEnv(env: NodeJS.ProcessEnv = process.env): ModelSet {
  const embedders = choiceListSetting(env, 'INFERENCE_EMBED_MODELS', EMBEDDER_NAMES, EMBEDDER_NAMES);
  const detector = choiceSetting(env, 'INFERENCE_DETECTOR', DETECTOR_NAMES);
  const pose = choiceSetting(env, 'INFERENCE_POSE', POSE_NAMES);
  const maxBatch = integerSetting(env, 'INFERENCE_MAX_BATCH', 8, 1, 256);
  const maxBulkBatch = integerSetting(env, 'INFERENCE_MAX_BULK_BATCH', Math.min(4, maxBatch), 1, 256);
  const labelMapFile = env.DETECTOR_LABELS ? path.resolve(env.DETECTOR_LABELS) : DEFAULT_LABEL_MAP_FILE;
  return { embedders, detector, pose, labelMapFile, maxBatch, maxBulkBatch };
}

/**
 * Loads every task's model once on the given runtime; the server keeps them for its lifetime. Every session runs
 * through one PriorityGate (priority.ts): each embedder's own sessions in batches of up to `maxBatch`, the
 * detector's one image at a time (its graph takes a batch of one).
 */
export async function loadModels(runtime: Runtime, modelSet: ModelSet): Promise<ModelRegistry> {
  // A search's run may start beside one bulk run under way: the ONNX runtime runs bulk work on a thread the OS
  // serves last (onnxruntime.ts), so the search takes the cores at once instead of waiting for the bulk run to end.
  const gate = new PriorityGate(2, 1);
  const scheduled = (maxBatch: number, maxBulkBatch = maxBatch): Runtime => ({
    description: runtime.description,
    load: async (source) => new BatchedSession(await runtime.load(source), maxBatch, gate, maxBulkBatch),
  });
  // A network several embedders run (MobileNetV2) is loaded once: one copy in memory, and their calls batch together.
  const embedNetworks = scheduled(modelSet.maxBatch, modelSet.maxBulkBatch);
  const loaded = new Map<string, Promise<InferenceSession>>();
  const sharedNetworks: Runtime = {
    description: embedNetworks.description,
    load: (source) => {
      if (!loaded.has(source.name)) loaded.set(source.name, embedNetworks.load(source));
      return loaded.get(source.name)!;
    },
  };
  const embedders: Embedder[] = [];
  for (const name of modelSet.embedders) embedders.push(await loadEmbedder(sharedNetworks, EMBEDDER_SPECS[name]));
  return {
    embed: new EmbedderSet(embedders),
    detect: await loadDetectTask(scheduled(1), modelSet.labelMapFile, modelSet),
    colors: loadColorsTask(),
  };
}
