import type ort from 'onnxruntime-node';
import type { TensorInfo } from '../runtime.ts';

/**
 * How the main thread starts an engine thread: whether its threads run in the background (a bulk lane) and the
 * options of every session it creates.
 */
export type EngineThreadData = { readonly background: boolean; readonly options: ort.InferenceSession.SessionOptions };

/** What the main thread asks of the engine thread (engine-thread.ts); `id` pairs each request with its reply. */
export type EngineRequest =
  | { readonly id: number; readonly kind: 'load'; readonly file: string }
  | {
      readonly id: number;
      readonly kind: 'run';
      readonly session: number;
      readonly data: Float32Array;
      readonly shape: readonly number[];
      readonly outputNames: readonly string[];
    }
  | {
      /** A run with every input by name (plain ONNX files: runtime.ts OnnxFileSession). */
      readonly id: number;
      readonly kind: 'runNamed';
      readonly session: number;
      readonly inputs: readonly NamedInput[];
      readonly outputNames: readonly string[];
    };

/** One input of a `runNamed` request. */
export type NamedInput = {
  readonly name: string;
  readonly type: 'float32' | 'int64';
  readonly data: Float32Array | BigInt64Array;
  readonly shape: readonly number[];
};

/** The engine thread's answers: id 0 once it has loaded onnxruntime-node, then one per request. */
export type EngineReply =
  | { readonly id: number; readonly ok: false; readonly message: string }
  | {
      /** Once started: onnxruntime-node's version and how the OS schedules the thread (`SCHED_IDLE`, `niceness 19`, `normal`). */
      readonly id: number;
      readonly ok: true;
      readonly version: string;
      readonly scheduling: string;
    }
  | {
      readonly id: number;
      readonly ok: true;
      readonly session: number;
      readonly inputNames: string[];
      readonly outputNames: string[];
      /** The inputs' and outputs' element types and shapes, as the file declares them. */
      readonly inputInfos: TensorInfo[];
      readonly outputInfos: TensorInfo[];
    }
  | { readonly id: number; readonly ok: true; readonly outputs: { name: string; data: Float32Array; shape: number[] }[] };
