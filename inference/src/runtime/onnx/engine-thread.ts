/**
 * The ONNX Runtime sessions, on a thread of their own (onnxruntime.ts starts it). onnxruntime-node runs a graph
 * synchronously on the thread that calls run(): on the service's main thread, every engine step (tens of ms) would
 * freeze the HTTP server and the completion of decodes and resizes, so that a search waits for a bulk step it never
 * asked for. Here the main thread stays free; the engine still runs one step at a time (priority.ts).
 */
import { parentPort } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import type { EngineReply, EngineRequest } from './engine-messages.ts';

const port = parentPort!;
const sessions: ort.InferenceSession[] = [];

port.postMessage({ id: 0, ok: true, version: String(ort.env.versions.node) } satisfies EngineReply);

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
    const session = await ort.InferenceSession.create(request.file, request.options);
    sessions.push(session);
    const { inputNames, outputNames } = session;
    return { reply: { id: request.id, ok: true, session: sessions.length - 1, inputNames: [...inputNames], outputNames: [...outputNames] }, transfer: [] };
  }
  const session = sessions[request.session]!;
  const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', request.data, request.shape) };
  const results = await session.run(feeds, request.outputNames);
  const outputs = request.outputNames.map((name) => {
    const tensor = results[name] as ort.Tensor;
    // A copy the thread owns, so that it can be handed over without copying again.
    return { name, data: Float32Array.from(tensor.data as ArrayLike<number>), shape: [...tensor.dims] };
  });
  return { reply: { id: request.id, ok: true, outputs }, transfer: outputs.map(({ data }) => data.buffer as ArrayBuffer) };
}
