import { z } from 'zod';
import type { Runtime } from '../../../runtime/runtime.ts';
import { readModelJson } from '../../embed/hf/configs.ts';
import { onnxFileName, type HfModelOptions } from '../../embed/hf/entry.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import type { Detector } from '../detector.ts';
import { DETR_MODEL_TYPES, loadDetrDetector } from './detr.ts';

/**
 * Detectors in the Hugging Face layout (INFERENCE_DETECTOR=<folder> or hf:owner/repo[@revision], inference/README.md,
 * "Detectors in the Hugging Face layout"), by `config.json`'s `model_type`: each family's loader reads the model as
 * Python transformers runs it.
 */
const DETECTOR_FAMILIES: readonly { readonly modelTypes: readonly string[]; readonly load: (runtime: Runtime, files: ModelFiles, options: { file: string }) => Promise<Detector> }[] = [
  { modelTypes: DETR_MODEL_TYPES, load: loadDetrDetector },
];

export const DETECTOR_MODEL_TYPES: readonly string[] = DETECTOR_FAMILIES.flatMap((family) => family.modelTypes);

const modelType = z.object({ model_type: z.string({ error: 'missing or not a string: the family of the model' }) });

/** The family loader of a model's `model_type`; one the service does not run stops it, naming the families it runs. */
async function familyOf(files: ModelFiles) {
  const { value } = await readModelJson(files, 'config.json', modelType);
  const family = DETECTOR_FAMILIES.find(({ modelTypes }) => modelTypes.includes(value.model_type));
  if (!family) throw new Error(`${files.source}: model_type "${value.model_type}" is not a detector the service runs (supported: ${DETECTOR_MODEL_TYPES.join(', ')})`);
  return family;
}

/** What a model in the Hugging Face layout reads besides its ONNX files: its configs and, where it reads text, its tokenizer. */
const CONFIG_FILES = ['config.json', 'preprocessor_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];

/** The ONNX files the families read: one whole model, or an image and a text tower. */
const TOWERS = ['model', 'vision_model', 'text_model'];

/**
 * Fetches every file a detector may read (a hub model's into the cache, once): its configs and the ONNX files of its
 * towers in the `file` variant, with their external data, so that a detector that cannot be had stops the service
 * before it listens. Its family is checked here too.
 */
export async function fetchHfDetector(files: ModelFiles, options: HfModelOptions): Promise<void> {
  await familyOf(files);
  const onnx = TOWERS.map((tower) => onnxFileName(tower, options.file)).flatMap((name) => [name, `${name}_data`]);
  for (const name of files.names.filter((name) => CONFIG_FILES.includes(name) || onnx.includes(name))) await files.localPath(name);
}

/** Loads the detector a model folder or hub repository holds, by its family. */
export async function loadHfDetector(runtime: Runtime, files: ModelFiles, options: HfModelOptions): Promise<Detector> {
  return (await familyOf(files)).load(runtime, files, { file: options.file });
}
