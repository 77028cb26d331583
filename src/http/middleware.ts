import { createMiddleware } from 'hono/factory';
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import type { AppEnv } from '../env';
import { ApiError, type ErrorEntry } from './envelope';
import { GENERAL } from './messages';
import { MAX_BODY_BYTES, paramsWithin, RequestParams, type ParamBudget } from './params';

/** What requestId sets: the call's id. */
export type RequestIdVariables = { reqid: string };

/** What endpoint() sets: the endpoint's envelope and its parameters. */
export type EndpointVariables = {
  /** The `method` field of this endpoint's envelope. */
  method: string;
  /** What this endpoint's failed answers carry besides status, method and error. */
  failureFields: FailureFields | undefined;
  /** Whether failures are answered with their HTTP status rather than 200 (admin API, console image). */
  httpStatuses: boolean;
  /** What this endpoint's body may hold: its bytes, a budget of its parameters made per request, its file parameters. */
  bodyLimits: { maxBytes: number; budget: () => ParamBudget; isFile: (name: string) => boolean };
  /** The query's parameters; authenticate adds the body's. */
  params: RequestParams;
};

/** What a failed answer sets: its message, for the request log; unset while the request has not failed. */
export type FailureVariables = { failure: string | undefined };

declare module 'hono' {
  interface ContextVariableMap extends RequestIdVariables, EndpointVariables, FailureVariables {}
}

/** A unique id per call: `reqid` in search bodies and the `X-Log-ID` header everywhere (docs/decisions.md). */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const reqid = crypto.randomUUID().replaceAll('-', '');
  c.set('reqid', reqid);
  c.header('X-Log-ID', reqid);
  await next();
});

/**
 * endpoint()'s variables as far as it got: a failure before it ran (in another middleware) or while it read the
 * parameters finds them unset.
 */
const endpointSoFar = (c: Context<AppEnv>): Partial<EndpointVariables> => c.var;

/**
 * One JSON line per call: request id, application, endpoint, HTTP status, the envelope's failure if any, and time
 * taken. The path is logged without its query string, which may carry an app key.
 */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const started = Date.now();
  await next();
  const line = {
    event: 'request',
    reqid: c.var.reqid,
    app: c.get('app')?.id ?? null,
    endpoint: endpointSoFar(c).method ?? null,
    http: `${c.req.method} ${c.req.path}`,
    status: c.res.status,
    ...(c.var.failure === undefined ? {} : { fail: c.var.failure }),
    ms: Date.now() - started,
  };
  console.log(JSON.stringify(line));
});

/** What a failed answer carries besides status, method and error: the endpoint's answer with nothing in it. */
export type FailureFields = (params: RequestParams | undefined, reqid: string) => Record<string, unknown>;

export type EndpointOptions = {
  /** MAX_BODY_BYTES unless the endpoint needs more. */
  maxBodyBytes?: number;
  /** paramsWithin unless the endpoint counts its parameters otherwise (the data endpoints' indexed images). */
  paramBudget?: () => ParamBudget;
  /** The parameters read as files whatever their part's headers say; none unless the endpoint takes files. */
  isFile?: (name: string) => boolean;
  failureFields?: FailureFields;
  /**
   * Failures answered with their HTTP status (the admin API, the console's image bytes); the API endpoints answer
   * every envelope with 200, as the official clients expect (docs/decisions.md).
   */
  httpStatuses?: boolean;
};

/**
 * Names the endpoint for its envelope and reads its query parameters; the body's are added by authenticate, once the
 * credentials allow (auth/middleware.ts).
 */
export const endpoint = (method: string, options: EndpointOptions = {}) =>
  createMiddleware<AppEnv>(async (c, next) => {
    c.set('method', method);
    c.set('failureFields', options.failureFields);
    c.set('httpStatuses', options.httpStatuses ?? false);
    c.set('bodyLimits', {
      maxBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
      budget: options.paramBudget ?? paramsWithin,
      isFile: options.isFile ?? (() => false),
    });
    c.set('params', RequestParams.fromQuery(c.req.raw));
    await next();
  });

/**
 * The success envelope of the endpoint under way, as the search endpoints answer: status, method and no errors, then
 * the endpoint's own fields, `reqid` last (docs/api.md).
 */
export function ok<Body extends object>(c: Context<AppEnv>, body: Body) {
  return c.json({ status: 'OK' as const, method: c.var.method, error: [] as ErrorEntry[], ...body, reqid: c.var.reqid });
}

/**
 * A failed answer with more than one error (an insert or remove whose every image was refused), in the same
 * envelope as a thrown failure and logged like one, with its first message.
 */
export function failedWith(c: Context<AppEnv>, error: ErrorEntry[]): Response {
  const [first] = error;
  c.set('failure', typeof first === 'string' ? first : (first?.error_message ?? ''));
  return c.json(failureBody(c, error));
}

/**
 * The failure envelope of the endpoint under way: its method, the errors and the fields its failures carry,
 * which take their defaults when the parameters are what failed to read. Before any endpoint, the method is empty.
 */
function failureBody(c: Context<AppEnv>, error: ErrorEntry[]) {
  const { method = '', failureFields, params } = endpointSoFar(c);
  return { status: 'fail', method, error, ...failureFields?.(params, c.var.reqid) };
}

/** Every failure leaves in the API's envelope; anything unexpected is logged and reported as a system error. */
export const onError: ErrorHandler<AppEnv> = (error, c) => {
  const apiError = error instanceof ApiError ? error : new ApiError(500, GENERAL.systemError);
  if (!(error instanceof ApiError)) {
    console.error(JSON.stringify({ event: 'unhandled_error', reqid: c.var.reqid, error: String(error), stack: error.stack }));
  }
  c.set('failure', apiError.message);
  const retryAfter = apiError.retryAfterSeconds;
  if (retryAfter !== undefined) c.header('Retry-After', String(retryAfter));
  // Before any endpoint, the failure is answered with its HTTP status, as notFound answers.
  const httpStatuses = endpointSoFar(c).httpStatuses ?? true;
  return c.json(failureBody(c, [apiError.entry()]), httpStatuses ? apiError.httpStatus : 200);
};

/** A path no endpoint has: no client of the API calls it, so it is answered as HTTP says. */
export const notFound: NotFoundHandler<AppEnv> = (c) =>
  c.json({ status: 'fail', method: '', error: ['No such endpoint.'] }, 404);
