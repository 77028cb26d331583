import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import type { Float32Tensor, InferenceSession, ModelSource, Runtime } from './runtime.ts';

const require = createRequire(import.meta.url);

/**
 * TensorFlow.js on its WebAssembly backend: single-threaded (tfjs has no
 * worker-thread support under Node), SIMD when the engine validates it.
 */
export async function createTfjsWasmRuntime(): Promise<Runtime> {
  // The .wasm binaries sit next to the package's entry point; loading them
  // from disk keeps start-up offline.
  const wasmDirectory = path.dirname(fileURLToPath(import.meta.resolve('@tensorflow/tfjs-backend-wasm')));
  setWasmPaths(wasmDirectory + path.sep);
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  if (!(await tf.setBackend('wasm'))) {
    throw new Error('tfjs wasm backend failed to initialise');
  }
  await tf.ready();
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  return {
    description: `tfjs ${tf.version.tfjs} wasm (${simd ? 'simd' : 'no simd'}, 1 thread)`,
    load: async (source) => new TfjsSession(await tf.loadGraphModel(tf.io.fromMemory(readModelArtifacts(source)))),
  };
}

class TfjsSession implements InferenceSession {
  readonly #model: tf.GraphModel;

  constructor(model: tf.GraphModel) {
    this.#model = model;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    const outputs = tf.tidy(() => {
      const result = this.#model.execute(tf.tensor(input.data, [...input.shape], 'float32'), [...outputNames]);
      return Array.isArray(result) ? result : [result];
    });
    try {
      const named = new Map<string, Float32Tensor>();
      for (const [index, name] of outputNames.entries()) {
        const output = outputs[index]!;
        named.set(name, { data: await output.data<'float32'>(), shape: output.shape });
      }
      return named;
    } finally {
      tf.dispose(outputs);
    }
  }
}

/** Reads a model's topology and weights from disk; nothing is fetched. */
function readModelArtifacts(source: ModelSource): tf.io.ModelArtifacts {
  switch (source.format) {
    case 'tfjs-graph-js-bundle':
      // Each file is a UMD bundle whose CommonJS export is the model.json object
      // or one weight shard as base64; nsfwjs imports them the same way.
      return toArtifacts(require(path.join(source.directory, 'model.min.js')) as tf.io.ModelJSON, (shardName) =>
        Buffer.from(require(path.join(source.directory, `${shardName}.min.js`)) as string, 'base64'),
      );
    case 'tfjs-graph': {
      const directory = path.dirname(source.modelJson);
      return toArtifacts(JSON.parse(readFileSync(source.modelJson, 'utf8')) as tf.io.ModelJSON, (shardName) =>
        readFileSync(path.join(directory, shardName)),
      );
    }
  }
}

/** The model.json plus its weight shards, concatenated in manifest order. */
function toArtifacts(modelJson: tf.io.ModelJSON, readShard: (name: string) => Buffer): tf.io.ModelArtifacts {
  const weightSpecs: tf.io.WeightsManifestEntry[] = [];
  const shards: Buffer[] = [];
  for (const group of modelJson.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const shardName of group.paths) shards.push(readShard(shardName));
  }
  const weights = Buffer.concat(shards);
  return {
    modelTopology: modelJson.modelTopology,
    format: modelJson.format,
    generatedBy: modelJson.generatedBy,
    convertedBy: modelJson.convertedBy,
    signature: modelJson.signature,
    weightSpecs,
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
  };
}
