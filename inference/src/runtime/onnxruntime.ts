import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import ort from 'onnxruntime-node';
import { CONVERT_COMMAND, ONNX_MODEL_DIRECTORY, onnxModelFile } from './onnx/model-files.ts';
import { checkOutputNames, type Float32Tensor, type InferenceSession, type ModelSource, type Runtime } from './runtime.ts';

export type OnnxRuntimeOptions = {
  /** Tried in order, e.g. ['cuda', 'cpu']; default ONNX_EXECUTION_PROVIDERS or 'cpu'. */
  readonly executionProviders?: readonly string[];
  /** Threads one inference may use; default ONNX_INTRA_OP_THREADS or every core. */
  readonly intraOpThreads?: number;
  /** Where the converted models are; default models/onnx. */
  readonly modelDirectory?: string;
};

/**
 * ONNX Runtime (onnxruntime-node) on the models scripts/convert-models.ts
 * converted from their TF.js graphs at install time. A session's run()
 * executes synchronously on the calling thread (onnxruntime-node defers it by
 * a setImmediate), spreading each operator over the intra-op threads.
 */
export async function createOnnxRuntime(options: OnnxRuntimeOptions = {}): Promise<Runtime> {
  const executionProviders = options.executionProviders ?? listFromEnv(process.env.ONNX_EXECUTION_PROVIDERS) ?? ['cpu'];
  const intraOpThreads = options.intraOpThreads ?? threadsFromEnv(process.env.ONNX_INTRA_OP_THREADS) ?? availableParallelism();
  const directory = options.modelDirectory ?? ONNX_MODEL_DIRECTORY;
  const providers = executionProviders.join(', ');
  const threads = `${intraOpThreads} intra-op thread${intraOpThreads > 1 ? 's' : ''}`;
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    executionProviders,
    intraOpNumThreads: intraOpThreads,
    // Nothing runs operators side by side in these graphs' sequential chains.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  };
  return {
    description: `onnxruntime-node ${ort.env.versions.node} (${providers}; ${threads})`,
    async load(source) {
      const file = onnxModelFile(source, directory);
      if (!existsSync(file)) {
        throw new Error(`no ONNX model for ${source.name} at ${file}: run "${CONVERT_COMMAND}" (npm install and npm ci run it too)`);
      }
      let session: ort.InferenceSession;
      try {
        session = await ort.InferenceSession.create(file, sessionOptions);
      } catch (error) {
        // onnxruntime's own message names neither the model nor the providers asked for.
        throw new Error(`ONNX Runtime could not load ${file} with execution providers ${providers}`, { cause: error });
      }
      const exposed = [...session.outputNames].sort();
      if (session.inputNames.length !== 1 || exposed.join('\n') !== [...new Set(source.outputs)].sort().join('\n')) {
        throw new Error(`${file} was converted for other inputs or outputs than ${source.name} declares: run "${CONVERT_COMMAND}"`);
      }
      return new OnnxSession(source, session);
    },
  };
}

class OnnxSession implements InferenceSession {
  readonly #source: ModelSource;
  readonly #session: ort.InferenceSession;
  readonly #inputName: string;

  constructor(source: ModelSource, session: ort.InferenceSession) {
    this.#source = source;
    this.#session = session;
    this.#inputName = session.inputNames[0]!;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const feeds = { [this.#inputName]: new ort.Tensor('float32', input.data, input.shape) };
    const results = await this.#session.run(feeds, outputNames);
    const named = new Map<string, Float32Tensor>();
    for (const name of outputNames) {
      const tensor = results[name] as ort.Tensor;
      const data = tensor.data instanceof Float32Array ? tensor.data : Float32Array.from(tensor.data as ArrayLike<number>);
      named.set(name, { data, shape: tensor.dims });
    }
    return named;
  }
}

function listFromEnv(value: string | undefined): string[] | undefined {
  const list = value?.split(',').map((item) => item.trim()).filter(Boolean);
  return list && list.length > 0 ? list : undefined;
}

function threadsFromEnv(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const threads = Number(value);
  if (!Number.isInteger(threads) || threads < 1) throw new Error(`ONNX_INTRA_OP_THREADS must be a positive integer, got "${value}"`);
  return threads;
}
