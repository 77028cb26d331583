/**
 * The service's routes on Hono: GET /health, GET /ready and POST /predict (inference/README.md, API). The form is
 * parsed by the wire contract's schema (contract/wire.ts); every failure answers `{"error": {"code", "message"}}`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { FORM_ERROR_CODES, predictFormSchema, PRIORITIES, PRIORITY_HEADER, type DetectorInfo, type ErrorBody, type Priority } from '@edge-image-search/contract/wire';
import type { BulkProcess } from './bulk-process.ts';
import { ApiError } from './errors.ts';
import { ImageDecodeError } from './image/decode.ts';
import type { ModelRegistry } from './models/registry.ts';
import { predict, predictText } from './predict.ts';
import { serve } from './priority.ts';
import { SaturatedError, type ByteBudget, type BytesHeld, type ConcurrencyLimit } from './concurrency-limit.ts';

/** The most one request body may hold. */
export const MAX_BODY_BYTES = 50 * 1024 * 1024;

/** The share of the body budget bulk requests may fill: past it bulk is refused, interactive still read. */
const BULK_BODY_SHARE = 0.5;

export type ServiceState = {
  /** Undefined while the models load. */
  models(): ModelRegistry | undefined;
  /** When set, /predict answers only `Authorization: Bearer <secret>`. */
  readonly secret: string | undefined;
  /** Predictions in flight and waiting, each class on its own: bulk never takes an interactive slot. */
  readonly inFlight: Readonly<Record<Priority, ConcurrencyLimit>>;
  /** Bytes of request bodies held at once. */
  readonly bodies: ByteBudget;
  /** Where bulk predictions go when they run in a process of their own (bulk-process.ts); else they run here. */
  readonly bulkProcess?: Pick<BulkProcess, 'predict'>;
};

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

export function createApp(state: ServiceState): Hono {
  const app = new Hono();

  app.get('/health', (c) => {
    const embed = state.models()?.embed;
    // The embedders' ids, default first: what `embed_model` may name (none while loading); `embedders` adds what a
    // caller needs to set one up: its dimensions, and whether it reads text (npm start derives EMBED_MODELS from it).
    const embedders = embed
      ? embed.ids.map((id) => {
          const { dim, embedText } = embed.select(id);
          return { id, dim, text: embedText !== undefined };
        })
      : [];
    // What an application's own types may be (the Worker checks them against it): any, named by prompts, for an
    // open-vocabulary detector; else those it can report.
    const detect = state.models()?.detect;
    const detector: DetectorInfo | undefined = detect && { model: detect.modelId, open_vocabulary: detect.openVocabulary, types: detect.types };
    return c.json({ status: 'ok', models: embed ? 'ready' : 'loading', embed_models: embed?.ids ?? [], embedders, ...(detector && { detector }) });
  });
  app.get('/ready', (c) => (state.models() ? c.json({ status: 'ready' }) : c.json({ status: 'loading' }, 503)));

  app.post('/predict', async (c) => {
    if (state.secret) {
      const presented = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '')?.[1] ?? '';
      if (!timingSafeEqual(digest(presented), digest(state.secret))) throw new ApiError(401, 'unauthorized', 'A valid bearer secret is required.');
    }
    const models = state.models();
    if (!models) throw new ApiError(503, 'loading', 'Models are still loading; retry shortly.');
    const priority = readPriority(c.req.header(PRIORITY_HEADER));
    const inFlight = state.inFlight[priority];
    // Refused before the body is read: an overloaded service should cost its callers as little as possible.
    inFlight.refuseWhenSaturated();
    const held = state.bodies.hold(priority === 'bulk' ? BULK_BODY_SHARE : 1);
    try {
      const { bulkProcess } = state;
      if (priority === 'bulk' && bulkProcess) {
        // Read under the budget here, parsed there: its answers, errors included, are the bulk process's.
        const body = await readBody(c.req.raw, held);
        const contentType = c.req.header('content-type') ?? '';
        return await serve(priority, () => inFlight.run(() => bulkProcess.predict(body, contentType)));
      }
      const request = await readForm(c.req.raw, held);
      if (request.input === 'text') return c.json(await serve(priority, () => predictText(request.text, models, inFlight, request.embedModel)));
      const { image, tasks, box, detections, embedModel, vocabulary } = request;
      const bytes = new Uint8Array(await image.arrayBuffer());
      return c.json(await serve(priority, () => predict(bytes, tasks, models, inFlight, { box, detections, embedModel, vocabulary })));
    } finally {
      held.release();
    }
  });

  for (const [path, method] of [['/health', 'GET'], ['/ready', 'GET'], ['/predict', 'POST']] as const) {
    app.all(path, (c) => {
      c.header('allow', method);
      return failure(c, 405, 'method_not_allowed', `Use ${method}; got ${c.req.method}.`);
    });
  }
  app.notFound((c) => failure(c, 404, 'not_found', `No route for ${c.req.path}.`));
  app.onError((error, c) => {
    if (error instanceof ApiError) return failure(c, error.status as ContentfulStatusCode, error.code, error.message);
    if (error instanceof SaturatedError) {
      c.header('retry-after', '1');
      return failure(c, 503, 'busy', 'Too many predictions are waiting; retry shortly.');
    }
    if (error instanceof ImageDecodeError) return failure(c, 422, error.code, error.message);
    console.error('inference: request failed', error);
    return failure(c, 500, 'internal_error', 'Internal error.');
  });
  return app;
}

function readPriority(header: string | undefined): Priority {
  if (header === undefined) return 'interactive';
  const priority = PRIORITIES.find((name) => name === header.trim().toLowerCase());
  if (!priority) throw new ApiError(400, 'bad_priority', `The ${PRIORITY_HEADER} header must be one of: ${PRIORITIES.join(', ')}.`);
  return priority;
}

function failure(c: Context, status: ContentfulStatusCode, code: string, message: string): Response {
  return c.json({ error: { code, message } } satisfies ErrorBody, status);
}

/** Reads the multipart body under the byte budget and parses its fields by the contract. */
async function readForm(request: Request, held: BytesHeld) {
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\s*;/i.test(contentType)) throw new ApiError(400, 'bad_request', 'The body must be multipart/form-data.');
  const body = await readBody(request, held);
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new ApiError(400, 'bad_request', 'The multipart body could not be parsed.');
  }
  const fields = Object.fromEntries(Object.keys(FORM_ERROR_CODES).map((name) => [name, form.get(name) ?? undefined]));
  const parsed = predictFormSchema.safeParse(fields);
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  const field = String(issue?.path[0]) as keyof typeof FORM_ERROR_CODES;
  const code: string = (issue?.code === 'custom' && issue.params?.code) || FORM_ERROR_CODES[field] || 'bad_request';
  throw new ApiError(400, code, issue?.message ?? 'The form is invalid.');
}

/**
 * The whole body, at most MAX_BODY_BYTES: its declared length is taken from the body budget before a byte is read,
 * and whatever comes past it as it comes.
 */
async function readBody(request: Request, held: BytesHeld): Promise<Uint8Array> {
  const tooLarge = () => new ApiError(413, 'payload_too_large', `The body exceeds ${MAX_BODY_BYTES} bytes.`);
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  held.take(declared);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (!request.body) return new Uint8Array();
  try {
    for await (const chunk of request.body) {
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) throw tooLarge();
      if (size > declared) held.take(Math.min(chunk.byteLength, size - declared));
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    // The client went away mid-body: a fault of the request, not of the service (and nobody is left to answer).
    throw new ApiError(400, 'incomplete_body', 'The connection closed before the whole body arrived.');
  }
  return Buffer.concat(chunks);
}
