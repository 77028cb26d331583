import { statSync } from 'node:fs';
import path from 'node:path';
import { PriorityGate } from '../priority.ts';
import { BatchedSession } from '../runtime/batched-session.ts';
import type { InferenceSession, ModelSource, OnnxFileSession, Runtime } from '../runtime/runtime.ts';
import { loadColorsTask, type ColorsTask } from './colors/colors-task.ts';
import { CENTERNET_SOURCE } from './detect/centernet.ts';
import { DETECTOR_NAMES, loadDetectTask, POSE_NAMES, type DetectorName, type DetectTask, type PoseName } from './detect/detect-task.ts';
import { fetchHfDetector, fetchHfParser } from './detect/hf/hf-detector.ts';
import { loadEmbedder, type Embedder, type EmbedderSpec } from './embed/embedder.ts';
import { EmbedderSet } from './embed/embedder-set.ts';
import { EMBEDDER_NAMES, EMBEDDER_SPECS, type EmbedderName } from './embed/embedder-specs.ts';
import { parseHfModelEntry, type HfModelEntry, type ModelLocation } from './embed/hf/entry.ts';
import { fetchHfModel, loadHfEmbedder } from './embed/hf/hf-embedder.ts';
import { hubModelFiles, hubSettingsFromEnv, parseHubRef } from './hub/hub.ts';
import { folderModelFiles, type ModelFiles } from './hub/model-files.ts';
import { MOVENET_SOURCE } from './pose/movenet.ts';
import { integerSetting } from '../settings.ts';

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

/**
 * An INFERENCE_EMBED_MODELS entry: a built-in embedder by its short name (embedder-specs.ts), or a model in the
 * Hugging Face layout (embed/hf/): a folder, or `hf:owner/repo[@revision]`, with its options.
 */
export type EmbedModelEntry = { readonly kind: 'built-in'; readonly name: EmbedderName } | ({ readonly kind: 'hf-layout' } & HfModelEntry);

/** An INFERENCE_DETECTOR entry: `centernet` or `none`, or a detector in the Hugging Face layout (a folder or `hf:`). */
export type DetectorEntry = { readonly kind: 'built-in'; readonly name: DetectorName } | ({ readonly kind: 'hf-layout' } & HfModelEntry);

/** An INFERENCE_POSE entry: `movenet` or `none`, or a clothes parser in the Hugging Face layout run on each person. */
export type PoseEntry = { readonly kind: 'built-in'; readonly name: PoseName } | ({ readonly kind: 'hf-layout' } & HfModelEntry);

/** Which models the service loads, from its environment (inference/README.md, Run). */
export type ModelSet = {
  /** INFERENCE_EMBED_MODELS: the embedders loaded, the first the default (default `mobilenet-v2,fused`). */
  readonly embedders: readonly [EmbedModelEntry, ...EmbedModelEntry[]];
  /** INFERENCE_DETECTOR: `centernet` (default), `none`, or a detector in the Hugging Face layout. */
  readonly detector: DetectorEntry;
  /** INFERENCE_POSE: `movenet` (default: what detected people wear), `none`, or a clothes parser. */
  readonly pose: PoseEntry;
  /** DETECTOR_LABELS: the detector's label map (a relative path is taken from the working directory); else the shipped one that fits. */
  readonly labelMapFile: string | undefined;
  /** PARSER_LABELS: the label map of INFERENCE_POSE's clothes parser; else the shipped one that fits. */
  readonly parserLabelMapFile: string | undefined;
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
  const embedders = embedModelEntries(env);
  const detector = modelEntry(env, 'INFERENCE_DETECTOR', DETECTOR_NAMES);
  const pose = modelEntry(env, 'INFERENCE_POSE', POSE_NAMES);
  const maxBatch = integerSetting(env, 'INFERENCE_MAX_BATCH', 8, 1, 256);
  const maxBulkBatch = integerSetting(env, 'INFERENCE_MAX_BULK_BATCH', Math.min(4, maxBatch), 1, 256);
  const labelMapFile = env.DETECTOR_LABELS ? path.resolve(env.DETECTOR_LABELS) : undefined;
  const parserLabelMapFile = env.PARSER_LABELS ? path.resolve(env.PARSER_LABELS) : undefined;
  return { embedders, detector, pose, labelMapFile, parserLabelMapFile, maxBatch, maxBulkBatch };
}

/**
 * INFERENCE_EMBED_MODELS's entries, in order (default `mobilenet-v2,fused`): each a built-in name, an `hf:` entry, or
 * else a folder path (absolute or relative to the working directory), with options after `?` (embed/hf/entry.ts).
 * A repeated entry, a malformed one or a folder that does not exist stops the service before it listens; what a
 * folder holds is read when the models load (loadModels).
 */
export function embedModelEntries(env: NodeJS.ProcessEnv = process.env): [EmbedModelEntry, ...EmbedModelEntry[]] {
  const value = env.INFERENCE_EMBED_MODELS || EMBEDDER_NAMES.join(',');
  const items = value.split(',').map((item) => item.trim());
  const listError = (detail = '') =>
    new Error(`INFERENCE_EMBED_MODELS must list one or more of ${EMBEDDER_NAMES.join(', ')}, comma-separated, each once, got "${value}"${detail}`);
  if (items.some((item) => item === '') || new Set(items).size !== items.length) throw listError();
  const entries = items.map((item): EmbedModelEntry => {
    if ((EMBEDDER_NAMES as readonly string[]).includes(item)) return { kind: 'built-in', name: item as EmbedderName };
    return { kind: 'hf-layout', ...hfLayoutEntry(item, (detail) => listError(` (model folders and hf:owner/repo[@revision] may be listed too: ${detail})`)) };
  });
  return entries as [EmbedModelEntry, ...EmbedModelEntry[]];
}

/**
 * A model folder or `hf:` entry, with its options; a malformed hub reference, like a missing folder, stops the
 * service before it listens (`refused` says how, for the setting it came from).
 */
function hfLayoutEntry(item: string, refused: (detail: string) => Error): HfModelEntry {
  const entry = parseHfModelEntry(item);
  if (entry.location.kind === 'hub') parseHubRef(entry.location.ref);
  if (entry.location.kind === 'folder' && !isDirectory(entry.location.path)) {
    throw refused(`"${item}" is neither, model folder ${entry.location.path} does not exist`);
  }
  return entry;
}

/** INFERENCE_DETECTOR's or INFERENCE_POSE's entry (default the first name): a built-in name, an `hf:` entry, or else a folder path. */
function modelEntry<Name extends string>(env: NodeJS.ProcessEnv, setting: string, names: readonly [Name, ...Name[]]): { readonly kind: 'built-in'; readonly name: Name } | ({ readonly kind: 'hf-layout' } & HfModelEntry) {
  const value = env[setting] || names[0];
  if ((names as readonly string[]).includes(value)) return { kind: 'built-in', name: value as Name };
  const refused = (detail: string) => new Error(`${setting} must be one of ${names.join(', ')}, a model folder or hf:owner/repo[@revision]: ${detail}`);
  return { kind: 'hf-layout', ...hfLayoutEntry(value, refused) };
}

function isDirectory(folder: string): boolean {
  try {
    return statSync(folder).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The files of a model in the Hugging Face layout: the one place where a location becomes ModelFiles (a folder on
 * disk; a hub repository through models/hub/).
 */
export async function modelFilesOf(location: ModelLocation): Promise<ModelFiles> {
  switch (location.kind) {
    case 'folder':
      return folderModelFiles(location.path);
    case 'hub':
      return hubModelFiles(parseHubRef(location.ref), hubSettingsFromEnv(), { log: console.log });
  }
}

/**
 * Fetches the files of the models in the Hugging Face layout (a hub model downloaded into the cache the first time):
 * called before the service listens, so that a model that cannot be had stops it there, naming what is missing.
 */
export async function fetchModelFiles(modelSet: ModelSet): Promise<void> {
  for (const entry of modelSet.embedders) {
    if (entry.kind === 'hf-layout') await fetchHfModel(await modelFilesOf(entry.location), entry.options);
  }
  const { detector, pose } = modelSet;
  if (detector.kind === 'hf-layout') await fetchHfDetector(await modelFilesOf(detector.location), detector.options);
  if (pose.kind === 'hf-layout') await fetchHfParser(await modelFilesOf(pose.location), pose.options);
}

/** A built-in entry's spec, for the scripts that measure the built-in embedders; any other entry throws. */
export function builtInSpec(entry: EmbedModelEntry): EmbedderSpec {
  if (entry.kind !== 'built-in') throw new Error(`${entry.entry} is not a built-in embedder: this measures ${EMBEDDER_NAMES.join(', ')} only`);
  return EMBEDDER_SPECS[entry.name];
}

/**
 * A plain ONNX file's session, scheduled like the embedders' networks: single-input runs (an image tower's pixels)
 * batched, runs by name (a text tower's tokens, of varying lengths) one at a time, all through the gate.
 */
function scheduledOnnxFile(session: OnnxFileSession, gate: PriorityGate, maxBatch: number, maxBulkBatch: number): OnnxFileSession {
  // A file whose batch dimension is fixed takes one image a run.
  const rows = typeof session.inputs[0]?.shape[0] === 'number' ? 1 : undefined;
  const batched = new BatchedSession(session, rows ?? maxBatch, gate, rows ?? maxBulkBatch);
  return {
    inputs: session.inputs,
    outputs: session.outputs,
    run: (input, outputNames) => batched.run(input, outputNames),
    runNamed: (inputs, outputNames) => gate.run(() => session.runNamed(inputs, outputNames)),
  };
}

/**
 * Loads every task's model once on the given runtime; the server keeps them for its lifetime. Every session runs
 * through one PriorityGate (priority.ts): each embedder's own sessions in batches of up to `maxBatch`, the
 * detector's one image at a time (its graph takes a batch of one).
 */
export async function loadModels(runtime: Runtime, modelSet: ModelSet): Promise<ModelRegistry> {
  // A search's run may start beside the bulk runs under way, one a lane: the ONNX runtime runs bulk work on threads
  // the OS serves last (onnxruntime.ts), so the search takes the cores at once instead of waiting for them to end.
  // Without lanes (bulk predictions are forwarded to a process of their own: bulk-process.ts), no bulk run comes
  // here; should one, it runs on the interactive thread, one at a time, instead of waiting for a lane forever.
  const bulkLanes = Math.max(1, runtime.bulkLanes ?? 1);
  const gate = new PriorityGate(bulkLanes + 1, bulkLanes);
  const scheduled = (maxBatch: number, maxBulkBatch = maxBatch): Runtime => ({
    description: runtime.description,
    bulkLanes,
    load: async (source) => new BatchedSession(await runtime.load(source), maxBatch, gate, maxBulkBatch),
    ...(runtime.loadOnnxFile && {
      loadOnnxFile: async (source) => scheduledOnnxFile(await runtime.loadOnnxFile!(source), gate, maxBatch, maxBulkBatch),
    }),
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
  for (const entry of modelSet.embedders) {
    const embedder =
      entry.kind === 'built-in'
        ? await loadEmbedder(sharedNetworks, EMBEDDER_SPECS[entry.name])
        : await loadHfEmbedder(embedNetworks, await modelFilesOf(entry.location), entry.options);
    const same = embedders.find(({ modelId }) => modelId === embedder.modelId);
    if (same) throw new Error(`INFERENCE_EMBED_MODELS lists the model ${embedder.modelId} twice (the second time as "${entry.kind === 'built-in' ? entry.name : entry.entry}")`);
    embedders.push(embedder);
  }
  return {
    embed: new EmbedderSet(embedders),
    detect: await loadDetectTask(scheduled(1), modelSet, modelFilesOf),
    colors: loadColorsTask(),
  };
}
