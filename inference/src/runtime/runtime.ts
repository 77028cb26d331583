/**
 * The seam between model logic and the engine that executes graphs. Models
 * describe where their files are and which nodes they want; a Runtime turns
 * that into numbers. tfjs (wasm) is the one implementation today; an ONNX
 * Runtime one is meant to slot in behind the same interface.
 */

/** A dense float32 tensor in row-major order (NHWC for images). */
export type Float32Tensor = {
  readonly data: Float32Array;
  readonly shape: readonly number[];
};

/**
 * Where a model's files are and in which format. A runtime accepts the formats
 * it can execute and rejects the others; an ONNX source joins this union with
 * the ONNX runtime.
 */
export type ModelSource =
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

export interface InferenceSession {
  /** Runs the graph on one input and returns the named nodes' outputs. */
  run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>>;
}

export interface Runtime {
  /** Human-readable engine description, for logs. */
  readonly description: string;
  load(source: ModelSource): Promise<InferenceSession>;
}
