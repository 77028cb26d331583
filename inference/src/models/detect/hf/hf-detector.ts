import { z } from 'zod';
import type { Runtime } from '../../../runtime/runtime.ts';
import { readModelJson } from '../../embed/hf/configs.ts';
import { onnxFileName, type HfModelOptions } from '../../embed/hf/entry.ts';
import type { ModelFiles } from '../../hub/model-files.ts';
import type { Detector, GarmentParser } from '../detector.ts';
import { DETR_MODEL_TYPES, loadDetrDetector } from './detr.ts';
import { fetchOwlModel, loadOwlDetector, OWL_MODEL_TYPES } from './owl.ts';
import { loadSegformerParser, PARSER_MODEL_TYPES } from './segformer.ts';

/*
 * Detectors and clothes parsers in the Hugging Face layout (INFERENCE_DETECTOR and INFERENCE_POSE may name a model
 * folder or hf:owner/repo[@revision], inference/README.md, "Detectors in the Hugging Face layout"), by `config.json`'s
 * `model_type`: each family's loader reads the model as Python transformers runs it.
 */

type Load<T> = (runtime: Runtime, files: ModelFiles, options: { file: string }) => Promise<T>;
type Fetch = (files: ModelFiles, options: { file: string }) => Promise<void>;

/** What a model in the Hugging Face layout reads besides its ONNX files: its configs. */
const CONFIG_FILES = ['config.json', 'preprocessor_config.json'];

/** Fetches a one-file model's configs and its `file` variant with its external data (DETR family, parsers). */
const fetchModelFile: Fetch = async (files, { file }) => {
  const onnx = onnxFileName('model', file);
  for (const name of files.names.filter((name) => CONFIG_FILES.includes(name) || name === onnx || name === `${onnx}_data`)) await files.localPath(name);
};

/** A clothes parser on the whole image, as the only detector: its regions are its detections. */
const parserAsDetector = (parser: GarmentParser): Detector => ({
  modelId: parser.modelId,
  labels: parser.labels,
  openVocabulary: false,
  detect: (pixels, minScore) => parser.parse(pixels, minScore),
});

const DETECTOR_FAMILIES: readonly { readonly modelTypes: readonly string[]; readonly load: Load<Detector>; readonly fetch: Fetch }[] = [
  { modelTypes: DETR_MODEL_TYPES, load: loadDetrDetector, fetch: fetchModelFile },
  { modelTypes: OWL_MODEL_TYPES, load: loadOwlDetector, fetch: fetchOwlModel },
  { modelTypes: PARSER_MODEL_TYPES, load: async (...args) => parserAsDetector(await loadSegformerParser(...args)), fetch: fetchModelFile },
];

export const DETECTOR_MODEL_TYPES: readonly string[] = DETECTOR_FAMILIES.flatMap((family) => family.modelTypes);

const modelType = z.object({ model_type: z.string({ error: 'missing or not a string: the family of the model' }) });

/** The family of a model's `model_type` among `families`; one not there stops the service, naming those it runs. */
async function familyOf<F extends { readonly modelTypes: readonly string[] }>(files: ModelFiles, families: readonly F[], what: string): Promise<F> {
  const { value } = await readModelJson(files, 'config.json', modelType);
  const family = families.find(({ modelTypes }) => modelTypes.includes(value.model_type));
  if (!family) {
    const supported = families.flatMap(({ modelTypes }) => modelTypes).join(', ');
    throw new Error(`${files.source}: model_type "${value.model_type}" is not ${what} the service runs (supported: ${supported})`);
  }
  return family;
}

/**
 * Fetches every file a detector reads (a hub model's into the cache, once), so that a detector that cannot be had
 * stops the service before it listens.
 */
export async function fetchHfDetector(files: ModelFiles, options: HfModelOptions): Promise<void> {
  await (await familyOf(files, DETECTOR_FAMILIES, 'a detector')).fetch(files, options);
}

/** Loads the detector a model folder or hub repository holds, by its family. */
export async function loadHfDetector(runtime: Runtime, files: ModelFiles, options: HfModelOptions): Promise<Detector> {
  return (await familyOf(files, DETECTOR_FAMILIES, 'a detector')).load(runtime, files, { file: options.file });
}

const PARSER_FAMILIES = [{ modelTypes: PARSER_MODEL_TYPES, load: loadSegformerParser, fetch: fetchModelFile }] as const;

/** Fetches a clothes parser's files before the service listens (INFERENCE_POSE naming one). */
export async function fetchHfParser(files: ModelFiles, options: HfModelOptions): Promise<void> {
  await (await familyOf(files, PARSER_FAMILIES, 'a clothes parser')).fetch(files, options);
}

/** Loads the clothes parser a model folder or hub repository holds, run on each detected person. */
export async function loadHfParser(runtime: Runtime, files: ModelFiles, options: HfModelOptions): Promise<GarmentParser> {
  return (await familyOf(files, PARSER_FAMILIES, 'a clothes parser')).load(runtime, files, { file: options.file });
}
