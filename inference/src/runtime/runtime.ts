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

export interface InferenceSession {
  /**
   * Runs the graph on one input (a batch of N >= 1 where the graph allows it)
   * and returns the named nodes' outputs; the names must be among the source's
   * `outputs`. A graph whose input is of another type than float32 gets the
   * values cast to it.
   */
  run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>>;
}

export interface Runtime {
  /** Human-readable engine description, for logs. */
  readonly description: string;
  load(source: ModelSource): Promise<InferenceSession>;
}

/** Refuses output names the model did not declare, the same way on every runtime. */
export function checkOutputNames(source: ModelSource, outputNames: readonly string[]): void {
  const undeclared = outputNames.filter((name) => !source.outputs.includes(name));
  if (undeclared.length > 0) {
    throw new Error(`model ${source.name}: ${undeclared.map((name) => `"${name}"`).join(', ')} not among its declared outputs`);
  }
}
