/**
 * ONNX Runtime sessions on a thread of their own (onnxruntime.ts starts one per class of work). onnxruntime-node
 * runs a graph synchronously on the thread that calls run(): on the service's main thread, every engine step (tens of
 * ms) would freeze the HTTP server and the completion of decodes and resizes. The bulk thread runs at the lowest OS
 * priority, so that the kernel gives the cores to a search's run over a bulk run already under way.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type ort from 'onnxruntime-node';
import type { TensorInfo } from '../runtime.ts';
import type { EngineReply, EngineRequest, EngineThreadData } from './engine-messages.ts';

// Before onnxruntime is loaded: the intra-op threads each session starts inherit this thread's niceness (Linux
// sets it per thread).
const { niceness, options } = workerData as EngineThreadData;
if (niceness > 0) setPriority(niceness);
const { default: onnxruntime } = await import('onnxruntime-node');

const port = parentPort!;
const sessions: ort.InferenceSession[] = [];

port.postMessage({ id: 0, ok: true, version: String(onnxruntime.env.versions.node) } satisfies EngineReply);

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
