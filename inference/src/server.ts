/**
 * The inference HTTP service: GET /health, GET /ready and POST /predict.
 *
 *   INFERENCE_PORT=8788 INFERENCE_HOST=127.0.0.1 node inference/src/server.ts
 *
 * INFERENCE_RUNTIME picks the engine (onnx, the default, or tfjs-wasm); the
 * model set comes from INFERENCE_DETECTOR, DETECTOR_LABELS and
 * INFERENCE_MAX_BATCH (models/registry.ts); INFERENCE_MAX_WAITING bounds the
 * predictions waiting for a slot (default 64), beyond which /predict answers
 * 503 busy at once. The port is bound at once and
 * models load behind it: /health answers as soon as the process listens,
 * /ready only once the models are loaded and warmed. Port 0 picks a free
 * port; the "listening on" line on stdout names it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { ApiError } from './errors.ts';
import { ImageDecodeError } from './image/decode.ts';
import type { Box } from './image/view.ts';
import { loadModels, modelSetFromEnv, type ModelRegistry } from './models/registry.ts';
import type { ExternalDetections } from './models/detect/detect-task.ts';
import { isTask, TASKS, type Task } from './models/task-model.ts';
import { predict } from './predict.ts';
import { createRuntime, runtimeNameFromEnv } from './runtime/select.ts';
import { ByteBudget, ConcurrencyLimit, SaturatedError, type BytesHeld } from './concurrency-limit.ts';

const MAX_BODY_BYTES = 50 * 1024 * 1024;

const port = Number(process.env.INFERENCE_PORT ?? 8788);
const host = process.env.INFERENCE_HOST ?? '127.0.0.1';
/** When set, /predict answers only `Authorization: Bearer <INFERENCE_SECRET>` (the Worker's shared secret). */
const secret = process.env.INFERENCE_SECRET || undefined;
// Without a secret anyone who reaches the port may run the models: only a service bound to loopback may go without.
if (!secret && !['127.0.0.1', '::1', 'localhost'].includes(host)) {
  throw new Error(`INFERENCE_SECRET must be set when the service listens on ${host}: only a loopback host may run without it`);
}
const runtimeName = runtimeNameFromEnv();
const modelSet = modelSetFromEnv();

let models: ModelRegistry | undefined;
const maxWaiting = Number(process.env.INFERENCE_MAX_WAITING || 64);
if (!(Number.isInteger(maxWaiting) && maxWaiting >= 0)) {
  throw new Error(`INFERENCE_MAX_WAITING must be a non-negative integer, got "${process.env.INFERENCE_MAX_WAITING}"`);
}
// As many predictions in flight as one embedder batch holds: enough to fill batches, few enough to bound memory.
// Waiting requests hold their bodies (up to MAX_BODY_BYTES each): bounding them bounds memory under overload too.
const inFlight = new ConcurrencyLimit(modelSet.maxBatch, maxWaiting);
const maxBodyMegabytes = Number(process.env.INFERENCE_MAX_BODY_MB || 128);
if (!(Number.isInteger(maxBodyMegabytes) && maxBodyMegabytes >= MAX_BODY_BYTES / (1024 * 1024))) {
  throw new Error(`INFERENCE_MAX_BODY_MB must be an integer of at least ${MAX_BODY_BYTES / (1024 * 1024)}, got "${process.env.INFERENCE_MAX_BODY_MB}"`);
}
// Bodies held at once, counted before they are read: the memory of requests still reading or waiting is bounded too.
const bodies = new ByteBudget(maxBodyMegabytes * 1024 * 1024);

async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const pathname = (request.url ?? '/').split('?')[0];
  if (pathname === '/health') {
    requireMethod(request, response, 'GET');
    sendJson(response, 200, { status: 'ok', models: models ? 'ready' : 'loading' });
    return;
  }
  if (pathname === '/ready') {
    requireMethod(request, response, 'GET');
    sendJson(response, models ? 200 : 503, { status: models ? 'ready' : 'loading' });
    return;
  }
  if (pathname === '/predict') {
    requireMethod(request, response, 'POST');
    requireSecret(request);
    if (!models) throw new ApiError(503, 'loading', 'Models are still loading; retry shortly.');
    // Refused before the body is read: an overloaded service should cost its callers as little as possible.
    if (inFlight.saturated) throw new SaturatedError(maxWaiting);
    const held = bodies.hold();
    try {
      const form = await readMultipart(request, held);
      const tasks = parseTasks(form.get('tasks'));
      const image = form.get('image');
      if (!(image instanceof File)) throw new ApiError(400, 'missing_image', 'The form field "image" must be a file.');
      const box = parseBox(form.get('box'));
      const detections = parseDetections(form.get('detections'), tasks);
      const bytes = new Uint8Array(await image.arrayBuffer());
      sendJson(response, 200, await predict(bytes, tasks, models, inFlight, { box, detections }));
    } finally {
      held.release();
    }
    return;
  }
  throw new ApiError(404, 'not_found', `No route for ${pathname}.`);
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

function requireSecret(request: http.IncomingMessage): void {
  if (!secret) return;
  const presented = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
  if (!timingSafeEqual(digest(presented), digest(secret))) throw new ApiError(401, 'unauthorized', 'A valid bearer secret is required.');
}

function requireMethod(request: http.IncomingMessage, response: http.ServerResponse, method: 'GET' | 'POST'): void {
  if (request.method !== method) {
    response.setHeader('allow', method);
    throw new ApiError(405, 'method_not_allowed', `Use ${method}; got ${request.method}.`);
  }
}

/**
 * Reads the whole body (at most MAX_BODY_BYTES) and parses it as multipart/form-data; its declared length is taken
 * from the body budget before a byte is read, and whatever comes past it as it comes.
 */
async function readMultipart(request: http.IncomingMessage, held: BytesHeld): Promise<FormData> {
  const contentType = request.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new ApiError(400, 'bad_request', 'The body must be multipart/form-data.');
  }
  const tooLarge = () => new ApiError(413, 'payload_too_large', `The body exceeds ${MAX_BODY_BYTES} bytes.`);
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  held.take(declared);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    if (size > declared) held.take(Math.min(chunk.length, size - declared));
    chunks.push(chunk);
  }
  try {
    return await new Request('http://inference/predict', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: Buffer.concat(chunks),
      duplex: 'half',
    }).formData();
  } catch {
    throw new ApiError(400, 'bad_request', 'The multipart body could not be parsed.');
  }
}

/** "embed" or "embed,detect": known task names, duplicates dropped, order kept. */
function parseTasks(field: unknown): Task[] {
  const names = typeof field === 'string' ? field.split(',').map((name) => name.trim()).filter(Boolean) : [];
  if (names.length === 0) {
    throw new ApiError(400, 'missing_tasks', `The form field "tasks" must list tasks out of: ${TASKS.join(', ')}.`);
  }
  const unknown = names.filter((name) => !isTask(name));
  if (unknown.length > 0) {
    throw new ApiError(400, 'unknown_task', `Unknown task(s): ${unknown.join(', ')}; known: ${TASKS.join(', ')}.`);
  }
  return [...new Set(names as Task[])];
}

const BOX_PATTERN = /^\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*,\s*(-?\d{1,9})\s*$/;

/**
 * The optional "box" field: "x1,y1,x2,y2", integers in original pixels. Its
 * area inside the image is checked once the image's size is known (predict.ts).
 */
function parseBox(field: unknown): Box | undefined {
  if (field === null) return undefined;
  const match = typeof field === 'string' ? BOX_PATTERN.exec(field) : null;
  if (!match) {
    throw new ApiError(400, 'bad_box', 'The form field "box" must be four integers "x1,y1,x2,y2" in image pixels.');
  }
  const [x1, y1, x2, y2] = match.slice(1, 5).map(Number) as [number, number, number, number];
  if (!(x2 > x1 && y2 > y1)) throw new ApiError(400, 'bad_box', `The box ${x1},${y1},${x2},${y2} needs x2 > x1 and y2 > y1.`);
  return [x1, y1, x2, y2];
}

/** Raw detections a request may carry, at most; DETR answers 100 per image. */
const MAX_EXTERNAL_DETECTIONS = 1000;

/**
 * The optional "detections" field: JSON {"model": "...", "objects": [{"label", "score", "box": [x1,y1,x2,y2]}]},
 * boxes in original pixels (fractional allowed), from a detector outside this service. Only with the detect task.
 */
function parseDetections(field: unknown, tasks: readonly Task[]): ExternalDetections | undefined {
  if (field === null) return undefined;
  const invalid = (why: string) => new ApiError(400, 'bad_detections', `The form field "detections" ${why}.`);
  if (!tasks.includes('detect')) throw invalid('needs the detect task');
  let parsed: unknown;
  try {
    parsed = typeof field === 'string' ? JSON.parse(field) : undefined;
  } catch {
    throw invalid('must be JSON');
  }
  const { model, objects } = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { model?: unknown; objects?: unknown };
  if (typeof model !== 'string' || model.length === 0 || model.length > 200) throw invalid('needs "model", a name of 1-200 characters');
  if (!Array.isArray(objects) || objects.length > MAX_EXTERNAL_DETECTIONS) {
    throw invalid(`needs "objects", an array of at most ${MAX_EXTERNAL_DETECTIONS} detections`);
  }
  return {
    model,
    objects: objects.map((object: unknown, index) => {
      const { label, score, box } = (typeof object === 'object' && object !== null ? object : {}) as { label?: unknown; score?: unknown; box?: unknown };
      const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
      if (typeof label !== 'string' || !finite(score) || !Array.isArray(box) || box.length !== 4 || !box.every(finite)) {
        throw invalid(`objects[${index}] must be {"label": string, "score": number, "box": [x1, y1, x2, y2]}`);
      }
      return { label, score, box: [box[0], box[1], box[2], box[3]] as Box };
    }),
  };
}

function sendError(response: http.ServerResponse, error: unknown): void {
  let status = 500;
  let code = 'internal_error';
  let message = 'Internal error.';
  if (error instanceof ApiError) {
    ({ status, code, message } = error);
  } else if (error instanceof SaturatedError) {
    [status, code, message] = [503, 'busy', 'Too many predictions are waiting; retry shortly.'];
    response.setHeader('retry-after', '1');
  } else if (error instanceof ImageDecodeError) {
    ({ code, message } = error);
    status = 422;
  } else {
    console.error('inference: request failed', error);
  }
  if (response.headersSent || response.destroyed) return;
  sendJson(response, status, { error: { code, message } });
}

function sendJson(response: http.ServerResponse, status: number, body: object): void {
  const json = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  response.end(json);
}

/**
 * Binds the port at once, so that /health answers while the models load behind it (/ready and /predict answer
 * `503 loading` meanwhile). Called once every declaration of this module is initialised: a request that arrives
 * during loading must find the whole module there.
 */
async function start(): Promise<void> {
  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => sendError(response, error));
  });
  server.listen(port, host, () => {
    const address = server.address();
    const boundPort = typeof address === 'object' && address ? address.port : port;
    console.log(`inference: listening on http://${host}:${boundPort}`);
  });
  try {
    const runtime = await createRuntime(runtimeName);
    const started = performance.now();
    models = await loadModels(runtime, modelSet);
    const loaded = [...models.values()].map((model) => `${model.task}=${model.modelId}`).join(', ');
    console.log(`inference: runtime ${runtimeName}, ${runtime.description}; loaded ${loaded} in ${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    console.error('inference: model loading failed', error);
    process.exit(1);
  }
}

await start();
