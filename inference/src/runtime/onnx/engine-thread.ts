/**
 * ONNX Runtime sessions on a thread of their own (onnxruntime.ts starts one for interactive work and the bulk lanes).
 * onnxruntime-node runs a graph synchronously on the thread that calls run(): on the service's main thread, every
 * engine step (tens of ms) would freeze the HTTP server and the completion of decodes and resizes. A bulk lane runs
 * in the background: under Linux's SCHED_IDLE policy where it can be set, else at the lowest niceness, so that the
 * kernel gives the cores to a search's run over bulk runs already under way (docs/decisions.md, "Inserts at the
 * service's speed").
 */
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { TensorInfo } from '../runtime.ts';
import type { EngineReply, EngineRequest, EngineThreadData } from './engine-messages.ts';

/** The lowest niceness: a background lane's where SCHED_IDLE cannot be set. */
const BACKGROUND_NICENESS = 19;

/**
 * Puts this thread in the background, before onnxruntime is loaded: the intra-op threads each session starts inherit
 * its policy and niceness (Linux keeps both per thread). SCHED_IDLE, unlike niceness 19, lets a waking search thread
 * take the core at once instead of after the running bulk thread's slice; no privilege is needed to lower a thread's
 * own policy, but Node has no call for it, so util-linux's chrt sets it on this thread's id.
 */
function intoBackground(): string {
  setPriority(BACKGROUND_NICENESS);
  try {
    const threadId = path.basename(readlinkSync('/proc/thread-self'));
    execFileSync('chrt', ['--idle', '--pid', '0', threadId], { stdio: 'ignore' });
    return 'SCHED_IDLE';
  } catch {
    // Not Linux, or no chrt: niceness alone.
    return `niceness ${BACKGROUND_NICENESS}`;
  }
}

const { background, options } = workerData as EngineThreadData;
const scheduling = background ? intoBackground() : 'normal';
const { default: onnxruntime } = await import('onnxruntime-node');

const port = parentPort!;
const sessions: ort.InferenceSession[] = [];

port.postMessage({ id: 0, ok: true, version: String(onnxruntime.env.versions.node), scheduling } satisfies EngineReply);

port.on('message', async (request: EngineRequest) => {
  try {
    const { reply, transfer } = await handle(request);
    port.postMessage(reply, transfer);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    port.postMessage({ id: request.id, ok: false, message } satisfies EngineReply);
  }
});

async function handle(request: EngineRequest): Promise<{ reply: EngineReply; transfer: ArrayBuffer[] }> {
  if (request.kind === 'load') {
    const session = await onnxruntime.InferenceSession.create(request.file, options);
    sessions.push(session);
    const { inputNames, outputNames } = session;
    const reply: EngineReply = {
      id: request.id,
      ok: true,
      session: sessions.length - 1,
      inputNames: [...inputNames],
      outputNames: [...outputNames],
      inputInfos: tensorInfos(session.inputMetadata, inputNames),
      outputInfos: tensorInfos(session.outputMetadata, outputNames),
    };
    return { reply, transfer: [] };
  }
  const session = sessions[request.session]!;
  const feeds =
    request.kind === 'run'
      ? { [session.inputNames[0]!]: new onnxruntime.Tensor('float32', request.data, request.shape) }
      : Object.fromEntries(request.inputs.map(({ name, type, data, shape }) => [name, new onnxruntime.Tensor(type, data, shape)]));
  const results = await session.run(feeds, request.outputNames);
  const outputs = request.outputNames.map((name) => {
    const tensor = results[name]!;
    // A copy the thread owns, so that it can be handed over without copying again (float32 as it is; a plain ONNX
    // file's integer or float64 outputs converted: its loader refuses float16 ones, whose bits this would misread).
    const data = tensor.data instanceof Float32Array ? tensor.data.slice() : Float32Array.from(tensor.data as ArrayLike<number>, Number);
    return { name, data, shape: [...tensor.dims] };
  });
  return { reply: { id: request.id, ok: true, outputs }, transfer: outputs.map(({ data }) => data.buffer as ArrayBuffer) };
}

/** Element types and shapes of a session's inputs or outputs (type 'unknown' and no shape for a non-tensor value). */
function tensorInfos(metadata: readonly ort.InferenceSession.ValueMetadata[] | undefined, names: readonly string[]): TensorInfo[] {
  return names.map((name, index) => {
    const value = metadata?.[index];
    return value?.isTensor ? { name, type: value.type, shape: [...value.shape] } : { name, type: 'unknown', shape: [] };
  });
}
