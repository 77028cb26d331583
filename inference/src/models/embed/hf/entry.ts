import path from 'node:path';

/*
 * An INFERENCE_EMBED_MODELS entry naming a model in the Hugging Face layout (README.md, "Models in the Hugging Face
 * layout"): where it is, and the options after `?`:
 *
 *   path/to/folder                       a folder, absolute or relative to the working directory
 *   hf:owner/repo[@revision]             a hub repository (models/hub/hub.ts)
 *   ...?file=quantized&pooling=cls       which ONNX file of each tower, and the pooling where the family offers one
 */

/** Where a model's files are: a folder on disk, or a hub repository (`ref`: `hf:owner/repo[@revision]`, as listed). */
export type ModelLocation = { readonly kind: 'folder'; /** Absolute. */ readonly path: string } | { readonly kind: 'hub'; readonly ref: string };

/**
 * How an image tower's output becomes the vector: `pooler` its pooled output (CLIP's `image_embeds`, SigLIP's and
 * DINOv2's `pooler_output`), `cls` the first token of `last_hidden_state`, `mean` the mean of its patch tokens (of
 * its positions, for a convolutional network's map).
 */
export const POOLINGS = ['pooler', 'cls', 'mean'] as const;
export type Pooling = (typeof POOLINGS)[number];

export type HfModelOptions = {
  /**
   * Which ONNX file of each tower: `fp32` (the default) is `onnx/NAME.onnx`, any other value V is `onnx/NAME_V.onnx`
   * (`quantized`, `int8`, `uint8`, `q4`, `bnb4`, ... as the exports name them).
   */
  readonly file: string;
  /** Absent: the family's default. */
  readonly pooling?: Pooling;
};

export type HfModelEntry = {
  /** As listed. */
  readonly entry: string;
  readonly location: ModelLocation;
  readonly options: HfModelOptions;
};

export const DEFAULT_FILE = 'fp32';
const FILE_VARIANT = /^[a-z0-9]+$/;

/** Whether an entry names a hub repository (`hf:`) rather than a folder. */
export const isHubEntry = (entry: string): boolean => entry.startsWith('hf:');

/** The entry's location and options; a malformed one throws, naming the entry. */
export function parseHfModelEntry(entry: string, cwd = process.cwd()): HfModelEntry {
  const question = entry.indexOf('?');
  const where = question < 0 ? entry : entry.slice(0, question);
  const options = parseOptions(entry, question < 0 ? '' : entry.slice(question + 1));
  // A hub reference is checked by the hub's own parser (models/hub/), where its files are asked for.
  if (isHubEntry(where)) return { entry, location: { kind: 'hub', ref: where }, options };
  if (!where) throw new Error(`INFERENCE_EMBED_MODELS entry "${entry}": no folder before the options`);
  return { entry, location: { kind: 'folder', path: path.resolve(cwd, where) }, options };
}

function parseOptions(entry: string, query: string): HfModelOptions {
  let file = DEFAULT_FILE;
  let pooling: Pooling | undefined;
  const seen = new Set<string>();
  for (const pair of query ? query.split('&') : []) {
    const equals = pair.indexOf('=');
    const [key, value] = equals < 0 ? [pair, ''] : [pair.slice(0, equals), pair.slice(equals + 1)];
    const fail = (why: string) => new Error(`INFERENCE_EMBED_MODELS entry "${entry}": ${why}`);
    if (seen.has(key)) throw fail(`option "${key}" given twice`);
    seen.add(key);
    if (key === 'file') {
      if (!FILE_VARIANT.test(value)) throw fail(`file must be fp32 or an ONNX file's variant suffix (quantized, int8, uint8, q4, ...), got "${value}"`);
      file = value;
    } else if (key === 'pooling') {
      if (!(POOLINGS as readonly string[]).includes(value)) throw fail(`pooling must be one of ${POOLINGS.join(', ')}, got "${value}"`);
      pooling = value as Pooling;
    } else {
      throw fail(`unknown option "${key}" (the options are file and pooling)`);
    }
  }
  return pooling ? { file, pooling } : { file };
}

/** The ONNX file of a tower, `onnx/NAME.onnx` or `onnx/NAME_VARIANT.onnx`, as the entry's `file` option picks. */
export const onnxFileName = (tower: string, file: string): string => `onnx/${tower}${file === DEFAULT_FILE ? '' : `_${file}`}.onnx`;
