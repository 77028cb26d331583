import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { checkOutputNames, type Float32Tensor, type InferenceSession, type ModelSource, type Runtime } from './runtime.ts';
import { readModelArtifacts } from './tfjs-artifacts.ts';

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
    load: async (source) => new TfjsSession(source, await tf.loadGraphModel(tf.io.fromMemory(readModelArtifacts(source)))),
  };
}

class TfjsSession implements InferenceSession {
  readonly #source: ModelSource;
  readonly #model: tf.GraphModel;

  constructor(source: ModelSource, model: tf.GraphModel) {
    this.#source = source;
    this.#model = model;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const outputs = tf.tidy(() => {
      const tensor = tf.tensor(input.data, [...input.shape], 'float32');
      // Inputs come as float32; a graph that takes another type (MoveNet's int32 pixels) gets them cast, as the
      // converted ONNX graphs do (scripts/onnx-converter/convert.ts).
      const dtype = this.#model.inputs[0]!.dtype;
      const result = this.#model.execute(dtype === 'float32' ? tensor : tf.cast(tensor, dtype), [...outputNames]);
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
