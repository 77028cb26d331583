/**
 * The seam between model logic and the engine that executes graphs. Models
 * describe where their files are and which nodes they want; a Runtime turns
 * that into numbers. Two implementations: ONNX Runtime (onnxruntime.ts, on a
 * graph converted at install time by scripts/onnx-converter/) and tfjs on wasm
 * (tfjs-wasm.ts).
 */

/** A dense float32 tensor in row-major order (NHWC for images). */
export type Float32Tensor = {
  readonly data: Float32Array;
  readonly shape: readonly number[];
};

/** The files of a TensorFlow.js graph model, in one of the layouts the runtimes read. */
export type TfjsGraphFiles =
  | {
      /**
       * A TensorFlow.js graph model whose model.json and weight shards are each
       * wrapped in a CommonJS module (model.min.js, group1-shardNofM.min.js), as
       * nsfwjs ships its bundled models.
       */
      readonly format: 'tfjs-graph-js-bundle';
      readonly directory: string;
    }
  | {
      /**
       * A plain TensorFlow.js graph model: a model.json (format "graph-model")
       * whose weightsManifest names binary shards beside it.
       */
      readonly format: 'tfjs-graph';
      /** Absolute path of the model.json file. */
      readonly modelJson: string;
    };

/**
 * A model: its TF.js graph files, a name and the graph nodes it reads. tfjs
 * executes the graph as stored; the ONNX runtime executes a copy converted
 * ahead of time (scripts/convert-models.ts), which keeps only what `outputs`
 * need, so every node a session is asked for must be listed here.
 */
export type ModelSource = TfjsGraphFiles & {
  /** Names the converted file: models/onnx/NAME.onnx. */
  readonly name: string;
  /** Every node InferenceSession.run may be asked for. */
  readonly outputs: readonly string[];
  /**
   * The input's shape (-1: free) where it differs from the one the graph's placeholder declares, e.g. part of a
   * graph read at another resolution or batch size. Both runtimes and the converter take the graph as declaring it.
   */
  readonly inputShape?: readonly number[];
};

/**
 * A plain ONNX file, run as it is (a Hugging Face export: models/embed/hf/), on the runtimes that read ONNX files
 * (Runtime.loadOnnxFile). Unlike a ModelSource nothing is converted: the file names its own inputs and outputs, and a
 * session feeds its inputs by name (InferenceSession.run feeds a graph of one input).
 */
export type OnnxFileSource = {
  readonly format: 'onnx-file';
  /** Absolute path of the .onnx file (external data, if any, beside it as the file names it). */
  readonly file: string;
  /** For messages and logs. */
  readonly name: string;
  /** The outputs the session may be asked for, each one of the file's (checked at load); absent: any of the file's. */
  readonly outputs?: readonly string[];
};

/** A dense int64 tensor in row-major order (token ids, attention masks). */
export type Int64Tensor = {
  readonly data: BigInt64Array;
  readonly shape: readonly number[];
};

/** A graph's inputs by name: float32 (pixels) or int64 (token ids). */
export type NamedInputs = ReadonlyMap<string, Float32Tensor | Int64Tensor>;

/** A graph input or output as its file declares it: element type (`float32`, `int64`, ...) and shape (a string: free). */
export type TensorInfo = {
  readonly name: string;
  readonly type: string;
  readonly shape: readonly (number | string)[];
};

export interface InferenceSession {
  /**
   * Runs the graph on one input (a batch of N >= 1 where the graph allows it)
   * and returns the named nodes' outputs; the names must be among the source's
   * `outputs`. A graph whose input is of another type than float32 gets the
   * values cast to it.
   */
  run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>>;
}

/**
 * A session of a plain ONNX file. `run` feeds the file's only input (a float32 batch, e.g. pixel values: what
 * BatchedSession stacks); `runNamed` feeds every input by name, float32 or int64. Outputs come back as float32.
 */
export interface OnnxFileSession extends InferenceSession {
  /** The file's inputs and outputs as it declares them. */
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  runNamed(inputs: NamedInputs, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>>;
}

/**
 * The classes of runs (contract/wire.ts, PRIORITIES) a process's engine threads are for: both, or one, where the
 * service runs bulk predictions in a process of their own (bulk-process.ts): it keeps no bulk lane, and that process
 * no interactive thread.
 */
export type RunClasses = 'both' | 'interactive' | 'bulk';

export interface Runtime {
  /** Human-readable engine description, for logs. */
  readonly description: string;
  /** How many bulk runs it runs side by side, each beside any interactive run (absent: 1; 0: on the interactive thread). */
  readonly bulkLanes?: number;
  load(source: ModelSource): Promise<InferenceSession>;
  /** Loads a plain ONNX file; absent on runtimes that cannot run one (tfjs-wasm). */
  loadOnnxFile?(source: OnnxFileSource): Promise<OnnxFileSession>;
}

/** Refuses output names the model did not declare, the same way on every runtime. */
export function checkOutputNames(source: Pick<ModelSource, 'name' | 'outputs'>, outputNames: readonly string[]): void {
  const undeclared = outputNames.filter((name) => !source.outputs.includes(name));
  if (undeclared.length > 0) {
    throw new Error(`model ${source.name}: ${undeclared.map((name) => `"${name}"`).join(', ')} not among its declared outputs`);
  }
}
