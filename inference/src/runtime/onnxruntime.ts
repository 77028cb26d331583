import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { Priority } from '@edge-image-search/contract/wire';
import { currentPriority } from '../priority.ts';
import type { EngineReply, EngineRequest, EngineThreadData } from './onnx/engine-messages.ts';
import { CONVERT_COMMAND, ONNX_MODEL_DIRECTORY, onnxModelFile } from './onnx/model-files.ts';
import {
  checkOutputNames,
  type Float32Tensor,
  type InferenceSession,
  type ModelSource,
  type NamedInputs,
  type OnnxFileSession,
  type OnnxFileSource,
  type Runtime,
  type TensorInfo,
} from './runtime.ts';

export type OnnxRuntimeOptions = {
  /** Tried in order, e.g. ['cuda', 'cpu']; default ONNX_EXECUTION_PROVIDERS or 'cpu'. */
  readonly executionProviders?: readonly string[];
  /** Threads one inference may use; default ONNX_INTRA_OP_THREADS or every core. */
  readonly intraOpThreads?: number;
  /** Where the converted models are; default models/onnx. */
  readonly modelDirectory?: string;
};

/**
 * ONNX Runtime (onnxruntime-node) on the models scripts/convert-models.ts converted from their TF.js graphs at
 * install time, and on plain ONNX files as they are (loadOnnxFile: models in the Hugging Face layout). Each model is
 * loaded twice, on two engine threads (onnx/engine-thread.ts): one for interactive runs, one for bulk runs at the
 * lowest OS priority. A run executes synchronously on its thread, spreading each operator
 * over the intra-op threads; the service's main thread stays free for requests and image work meanwhile, and a
 * search's run takes the cores from a bulk run under way instead of waiting for it to end.
 */
export async function createOnnxRuntime(options: OnnxRuntimeOptions = {}): Promise<Runtime> {
  const executionProviders = options.executionProviders ?? listFromEnv(process.env.ONNX_EXECUTION_PROVIDERS) ?? ['cpu'];
  const intraOpThreads = options.intraOpThreads ?? threadsFromEnv(process.env.ONNX_INTRA_OP_THREADS) ?? availableParallelism();
  const directory = options.modelDirectory ?? ONNX_MODEL_DIRECTORY;
  const providers = executionProviders.join(', ');
  const threads = `${intraOpThreads} intra-op thread${intraOpThreads > 1 ? 's' : ''}`;
  const sessionOptions: ort.InferenceSession.SessionOptions = {
    executionProviders: [...executionProviders],
    intraOpNumThreads: intraOpThreads,
    // Nothing runs operators side by side in these graphs' sequential chains.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    // Idle intra-op threads sleep instead of spinning for the next step: between steps the cores are wanted by
    // decoding, resizing and the Worker (a search took 1.6x as long with spinning on this 2-core machine).
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
  const [interactive, bulk] = await Promise.all([EngineThread.start(0), EngineThread.start(BULK_NICENESS)]);
  const lanes: Lanes = { interactive, bulk };
  return {
    description: `onnxruntime-node ${interactive.version} (${providers}; ${threads}; bulk runs at niceness ${BULK_NICENESS})`,
    async load(source) {
      const file = onnxModelFile(source, directory);
      if (!existsSync(file)) {
        throw new Error(`no ONNX model for ${source.name} at ${file}: run "${CONVERT_COMMAND}" (npm install and npm ci run it too)`);
      }
      let loaded: Record<Priority, Loaded>;
      try {
        const load = async (lane: EngineThread) => (await lane.ask({ kind: 'load', file, options: sessionOptions })) as Loaded;
        const [forInteractive, forBulk] = await Promise.all([load(interactive), load(bulk)]);
        loaded = { interactive: forInteractive, bulk: forBulk };
      } catch (error) {
        // onnxruntime's own message names neither the model nor the providers asked for.
        throw new Error(`ONNX Runtime could not load ${file} with execution providers ${providers}`, { cause: error });
      }
      const { inputNames, outputNames } = loaded.interactive;
      const exposed = [...outputNames].sort();
      if (inputNames.length !== 1 || exposed.join('\n') !== [...new Set(source.outputs)].sort().join('\n')) {
        throw new Error(`${file} was converted for other inputs or outputs than ${source.name} declares: run "${CONVERT_COMMAND}"`);
      }
      return new OnnxSession(source, lanes, { interactive: loaded.interactive.session, bulk: loaded.bulk.session });
    },
    async loadOnnxFile(source) {
      if (!existsSync(source.file)) throw new Error(`no ONNX file for ${source.name} at ${source.file}`);
      let loaded: Record<Priority, Loaded>;
      try {
        const load = async (lane: EngineThread) => (await lane.ask({ kind: 'load', file: source.file, options: sessionOptions })) as Loaded;
        const [forInteractive, forBulk] = await Promise.all([load(interactive), load(bulk)]);
        loaded = { interactive: forInteractive, bulk: forBulk };
      } catch (error) {
        throw new Error(`ONNX Runtime could not load ${source.file} (${source.name}) with execution providers ${providers}`, { cause: error });
      }
      const { outputNames } = loaded.interactive;
      const missing = (source.outputs ?? []).filter((name) => !outputNames.includes(name));
      if (missing.length > 0) {
        throw new Error(`${source.file} has no output ${missing.map((name) => `"${name}"`).join(', ')} (its outputs: ${outputNames.join(', ')})`);
      }
      return new OnnxFileSessionOnLanes(source, lanes, loaded);
    },
  };
}

/** Niceness of the bulk engine thread: the lowest priority, so that it yields the cores to anything else. */
const BULK_NICENESS = 19;

type Lanes = Readonly<Record<Priority, EngineThread>>;
type Loaded = Extract<EngineReply, { session: number }>;

/** One model on both engine threads: a run goes to the thread of the caller's class (priority.ts). */
class OnnxSession implements InferenceSession {
  readonly #source: ModelSource;
  readonly #lanes: Lanes;
  readonly #sessions: Readonly<Record<Priority, number>>;

  constructor(source: ModelSource, lanes: Lanes, sessions: Readonly<Record<Priority, number>>) {
    this.#source = source;
    this.#lanes = lanes;
    this.#sessions = sessions;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const priority = currentPriority();
    const request = { kind: 'run', session: this.#sessions[priority], data: input.data, shape: input.shape, outputNames } as const;
    const reply = await this.#lanes[priority].ask(request);
    const { outputs } = reply as Extract<EngineReply, { outputs: unknown }>;
    return new Map(outputs.map(({ name, data, shape }) => [name, { data, shape }]));
  }
}

/** A plain ONNX file on both engine threads: its inputs fed by name, or its only input by `run`. */
class OnnxFileSessionOnLanes implements OnnxFileSession {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** Its name and the outputs it may be asked for. */
  readonly #source: { readonly name: string; readonly outputs: readonly string[] };
  readonly #lanes: Lanes;
  readonly #sessions: Readonly<Record<Priority, number>>;

  constructor(source: OnnxFileSource, lanes: Lanes, loaded: Readonly<Record<Priority, Loaded>>) {
    this.inputs = loaded.interactive.inputInfos;
    this.outputs = loaded.interactive.outputInfos;
    this.#source = { name: source.name, outputs: source.outputs ?? loaded.interactive.outputNames };
    this.#lanes = lanes;
    this.#sessions = { interactive: loaded.interactive.session, bulk: loaded.bulk.session };
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    if (this.inputs.length !== 1) {
      throw new Error(`${this.#source.name} takes ${this.inputs.length} inputs (${this.inputs.map(({ name }) => name).join(', ')}): feed them by name`);
    }
    return this.runNamed(new Map([[this.inputs[0]!.name, input]]), outputNames);
  }

  async runNamed(inputs: NamedInputs, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const priority = currentPriority();
    const named = [...inputs].map(([name, { data, shape }]) => ({ name, type: data instanceof BigInt64Array ? ('int64' as const) : ('float32' as const), data, shape }));
    const reply = await this.#lanes[priority].ask({ kind: 'runNamed', session: this.#sessions[priority], inputs: named, outputNames });
    const { outputs } = reply as Extract<EngineReply, { outputs: unknown }>;
    return new Map(outputs.map(({ name, data, shape }) => [name, { data, shape }]));
  }
}

type Request = EngineRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
type Pending = { resolve: (reply: EngineReply) => void; reject: (error: Error) => void };

/** The engine thread, seen from the main thread: requests answered by id; it holds the process open only while asked. */
class EngineThread {
  readonly version: string;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;

  private constructor(worker: Worker, version: string) {
    this.#worker = worker;
    this.version = version;
    worker.on('message', (reply: EngineReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      if (reply.ok) pending.resolve(reply);
      else pending.reject(new Error(reply.message));
    });
    const fail = (error: Error): void => {
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the ONNX engine thread exited (code ${code})`)));
    worker.unref();
  }

  /** Starts the thread at `niceness` and waits until it has loaded onnxruntime-node. */
  static async start(niceness: number): Promise<EngineThread> {
    const workerData: EngineThreadData = { niceness };
    const worker = new Worker(new URL('./onnx/engine-thread.ts', import.meta.url), { workerData });
    const ready = await new Promise<EngineReply>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ok || !('version' in ready)) throw new Error('the ONNX engine thread did not start');
    return new EngineThread(worker, ready.version);
  }

  ask(request: Request): Promise<EngineReply> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage({ ...request, id });
    });
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
