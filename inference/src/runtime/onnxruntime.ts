import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { Priority } from '@edge-image-search/contract/wire';
import { currentPriority } from '../priority.ts';
import { integerSetting } from '../settings.ts';
import type { EngineReply, EngineRequest, EngineThreadData } from './onnx/engine-messages.ts';
import { CONVERT_COMMAND, ONNX_MODEL_DIRECTORY, onnxModelFile } from './onnx/model-files.ts';
import { executionProvidersFromEnv, onCpuAlone } from './onnx/providers.ts';
import {
  checkOutputNames,
  type Float32Tensor,
  type InferenceSession,
  type ModelSource,
  type NamedInputs,
  type OnnxFileSession,
  type OnnxFileSource,
  type RunClasses,
  type Runtime,
  type TensorInfo,
} from './runtime.ts';

export type OnnxRuntimeOptions = {
  /** Tried in order, e.g. ['cuda', 'cpu']; default ONNX_EXECUTION_PROVIDERS or 'cpu'. */
  readonly executionProviders?: readonly string[];
  /** Threads one inference may use; default ONNX_INTRA_OP_THREADS or every core. */
  readonly intraOpThreads?: number;
  /**
   * Bulk runs side by side, each on an engine thread of its own; default ONNX_BULK_LANES, else on the CPU alone
   * min(intraOpThreads, 4), else 1: every lane holds a copy of the models.
   */
  readonly bulkLanes?: number;
  /**
   * The classes of runs this process has engine threads for (runtime.ts, RunClasses); default both. A class without
   * threads of its own runs on the other's.
   */
  readonly serves?: RunClasses;
  /** Where the converted models are; default models/onnx. */
  readonly modelDirectory?: string;
};

/**
 * ONNX Runtime (onnxruntime-node) on the models scripts/convert-models.ts converted from their TF.js graphs at
 * install time, and on plain ONNX files as they are (loadOnnxFile: models in the Hugging Face layout). Each model is
 * loaded on every engine thread (onnx/engine-thread.ts): one for interactive runs, whose operators spread over every
 * intra-op thread, and the bulk lanes, in the OS's background, which split the threads between them and run bulk runs
 * side by side (docs/decisions.md, "Inserts at the service's speed"). A run executes synchronously on its thread; the
 * service's main thread stays free for requests and image work meanwhile, and a search's run takes the cores from
 * bulk runs under way instead of waiting for them to end.
 */
export async function createOnnxRuntime(options: OnnxRuntimeOptions = {}): Promise<Runtime> {
  const executionProviders = options.executionProviders ?? executionProvidersFromEnv();
  const intraOpThreads = options.intraOpThreads ?? integerSetting(process.env, 'ONNX_INTRA_OP_THREADS', availableParallelism(), 1);
  const directory = options.modelDirectory ?? ONNX_MODEL_DIRECTORY;
  const providers = executionProviders.join(', ');
  const serves = options.serves ?? 'both';
  const bulkLanes =
    serves === 'interactive' ? 0 : (options.bulkLanes ?? integerSetting(process.env, 'ONNX_BULK_LANES', onCpuAlone(executionProviders) ? Math.min(intraOpThreads, MAX_DEFAULT_BULK_LANES) : 1, 1));
  const bulkThreads = Math.max(1, Math.floor(intraOpThreads / Math.max(1, bulkLanes)));
  const plural = (count: number, noun: string) => `${count} ${noun}${count > 1 ? 's' : ''}`;
  const sessionOptions = (intraOpNumThreads: number): ort.InferenceSession.SessionOptions => ({
    executionProviders: [...executionProviders],
    intraOpNumThreads,
    // Nothing runs operators side by side in these graphs' sequential chains.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    // Idle intra-op threads sleep instead of spinning for the next step: between steps the cores are wanted by
    // decoding, resizing and the Worker (a search took 1.6x as long with spinning on this 2-core machine).
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const [interactive, bulk] = await Promise.all([
    serves === 'bulk' ? undefined : EngineThread.start(false, sessionOptions(intraOpThreads)),
    Promise.all(Array.from({ length: bulkLanes }, () => EngineThread.start(true, sessionOptions(bulkThreads)))),
  ]);
  const lanes = new Lanes(interactive, bulk);
  const threads = [
    interactive ? plural(intraOpThreads, 'intra-op thread') : 'no interactive thread',
    bulkLanes > 0 ? `bulk: ${plural(bulkLanes, 'lane')} of ${plural(bulkThreads, 'thread')}, ${bulk[0]!.scheduling}` : 'no bulk lane',
  ].join('; ');
  return {
    description: `onnxruntime-node ${(interactive ?? bulk[0]!).version} (${providers}; ${threads})`,
    bulkLanes,
    async load(source) {
      const file = onnxModelFile(source, directory);
      if (!existsSync(file)) {
        throw new Error(`no ONNX model for ${source.name} at ${file}: run "${CONVERT_COMMAND}" (npm install and npm ci run it too)`);
      }
      let loaded: Loaded[];
      try {
        loaded = await lanes.load(file);
      } catch (error) {
        // onnxruntime's own message names neither the model nor the providers asked for.
        throw new Error(`ONNX Runtime could not load ${file} with execution providers ${providers}`, { cause: error });
      }
      const { inputNames, outputNames } = loaded[0]!;
      const exposed = [...outputNames].sort();
      if (inputNames.length !== 1 || exposed.join('\n') !== [...new Set(source.outputs)].sort().join('\n')) {
        throw new Error(`${file} was converted for other inputs or outputs than ${source.name} declares: run "${CONVERT_COMMAND}"`);
      }
      return new OnnxSession(source, lanes, loaded);
    },
    async loadOnnxFile(source) {
      if (!existsSync(source.file)) throw new Error(`no ONNX file for ${source.name} at ${source.file}`);
      let loaded: Loaded[];
      try {
        loaded = await lanes.load(source.file);
      } catch (error) {
        throw new Error(`ONNX Runtime could not load ${source.file} (${source.name}) with execution providers ${providers}`, { cause: error });
      }
      const { outputNames } = loaded[0]!;
      const missing = (source.outputs ?? []).filter((name) => !outputNames.includes(name));
      if (missing.length > 0) {
        throw new Error(`${source.file} has no output ${missing.map((name) => `"${name}"`).join(', ')} (its outputs: ${outputNames.join(', ')})`);
      }
      return new OnnxFileSessionOnLanes(source, lanes, loaded);
    },
  };
}

/** Bulk lanes by default on a CPU at most: each is a copy of every model in memory. */
const MAX_DEFAULT_BULK_LANES = 4;

type Loaded = Extract<EngineReply, { session: number }>;

/**
 * The engine threads: the interactive one (if any) first, then the bulk lanes; a model has a session on each, in that
 * order. A run goes to a thread of its class, else (a process serving one class) to one of the other's.
 */
class Lanes {
  readonly #threads: readonly EngineThread[];
  readonly #byClass: Readonly<Record<Priority, readonly number[]>>;

  constructor(interactive: EngineThread | undefined, bulk: readonly EngineThread[]) {
    this.#threads = [...(interactive ? [interactive] : []), ...bulk];
    const first = interactive ? 1 : 0;
    this.#byClass = { interactive: interactive ? [0] : [], bulk: bulk.map((_, lane) => first + lane) };
  }

  /** Loads the file on every thread: its sessions, in the threads' order. */
  load(file: string): Promise<Loaded[]> {
    return Promise.all(this.#threads.map(async (thread) => (await thread.ask({ kind: 'load', file })) as Loaded));
  }

  /**
   * The thread for a run of `priority` and its session there: of the class's threads, the one with the fewest runs
   * under way (the gate lets as many bulk runs start as there are lanes: models/registry.ts).
   */
  pick(priority: Priority, sessions: readonly Loaded[]): { thread: EngineThread; session: number } {
    const own = this.#byClass[priority];
    const candidates = own.length > 0 ? own : this.#byClass[priority === 'bulk' ? 'interactive' : 'bulk'];
    const index = candidates.reduce((best, next) => (this.#threads[next]!.underWay < this.#threads[best]!.underWay ? next : best));
    return { thread: this.#threads[index]!, session: sessions[index]!.session };
  }
}

/** One model on both engine threads: a run goes to the thread of the caller's class (priority.ts). */
class OnnxSession implements InferenceSession {
  readonly #source: ModelSource;
  readonly #lanes: Lanes;
  readonly #sessions: readonly Loaded[];

  constructor(source: ModelSource, lanes: Lanes, sessions: readonly Loaded[]) {
    this.#source = source;
    this.#lanes = lanes;
    this.#sessions = sessions;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const { thread, session } = this.#lanes.pick(currentPriority(), this.#sessions);
    const reply = await thread.ask({ kind: 'run', session, data: input.data, shape: input.shape, outputNames });
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
  readonly #sessions: readonly Loaded[];

  constructor(source: OnnxFileSource, lanes: Lanes, sessions: readonly Loaded[]) {
    this.inputs = sessions[0]!.inputInfos;
    this.outputs = sessions[0]!.outputInfos;
    this.#source = { name: source.name, outputs: source.outputs ?? sessions[0]!.outputNames };
    this.#lanes = lanes;
    this.#sessions = sessions;
  }

  async run(input: Float32Tensor, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    if (this.inputs.length !== 1) {
      throw new Error(`${this.#source.name} takes ${this.inputs.length} inputs (${this.inputs.map(({ name }) => name).join(', ')}): feed them by name`);
    }
    return this.runNamed(new Map([[this.inputs[0]!.name, input]]), outputNames);
  }

  async runNamed(inputs: NamedInputs, outputNames: readonly string[]): Promise<Map<string, Float32Tensor>> {
    checkOutputNames(this.#source, outputNames);
    const named = [...inputs].map(([name, { data, shape }]) => ({ name, type: data instanceof BigInt64Array ? ('int64' as const) : ('float32' as const), data, shape }));
    const { thread, session } = this.#lanes.pick(currentPriority(), this.#sessions);
    const reply = await thread.ask({ kind: 'runNamed', session, inputs: named, outputNames });
    const { outputs } = reply as Extract<EngineReply, { outputs: unknown }>;
    return new Map(outputs.map(({ name, data, shape }) => [name, { data, shape }]));
  }
}

type Request = EngineRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
type Pending = { resolve: (reply: EngineReply) => void; reject: (error: Error) => void };

/** The engine thread, seen from the main thread: requests answered by id; it holds the process open only while asked. */
class EngineThread {
  readonly version: string;
  /** How the OS schedules its threads (engine-thread.ts). */
  readonly scheduling: string;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;

  private constructor(worker: Worker, version: string, scheduling: string) {
    this.#worker = worker;
    this.version = version;
    this.scheduling = scheduling;
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

  /** Requests sent and not yet answered. */
  get underWay(): number {
    return this.#pending.size;
  }

  /** Starts the thread, in the background or not, its sessions to be created with `options`; waits until it has loaded onnxruntime-node. */
  static async start(background: boolean, options: ort.InferenceSession.SessionOptions): Promise<EngineThread> {
    const workerData: EngineThreadData = { background, options };
    const worker = new Worker(new URL('./onnx/engine-thread.ts', import.meta.url), { workerData });
    const ready = await new Promise<EngineReply>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!ready.ok || !('version' in ready)) throw new Error('the ONNX engine thread did not start');
    return new EngineThread(worker, ready.version, ready.scheduling);
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
