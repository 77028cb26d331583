import { createMiddleware } from 'hono/factory';
import type { ErrorHandler, NotFoundHandler } from 'hono';
import type { AppEnv } from '../env';
import { ApiError, type ErrorStyle } from './envelope';
import { GENERAL } from './messages';
import { RequestParams } from './params';

/** A unique id per call: `reqid` in search bodies and the `X-Log-ID` header everywhere (DESIGN.md). */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const reqid = crypto.randomUUID().replaceAll('-', '');
  c.set('reqid', reqid);
  c.set('method', '');
  c.set('errorStyle', 'data');
  c.header('X-Log-ID', reqid);
  await next();
});

/**
 * One JSON line per call: request id, application, endpoint, status and time taken. The path is logged without its
 * query string, which may carry an app key.
 */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const started = Date.now();
  await next();
  const line = {
    event: 'request',
    reqid: c.var.reqid,
    app: c.get('app')?.id ?? null,
    endpoint: c.var.method || null,
    http: `${c.req.method} ${c.req.path}`,
    status: c.res.status,
    ms: Date.now() - started,
  };
  console.log(JSON.stringify(line));
});

/**
 * Names the endpoint for its envelope and reads its parameters from query and body alike, refusing a body over
 * `maxBodyBytes` (MAX_BODY_BYTES unless the endpoint needs more).
 */
export const endpoint = (method: string, errorStyle: ErrorStyle, options: { maxBodyBytes?: number } = {}) =>
  createMiddleware<AppEnv>(async (c, next) => {
    c.set('method', method);
    c.set('errorStyle', errorStyle);
    c.set('params', await RequestParams.from(c.req.raw, options.maxBodyBytes));
    await next();
  });

/** Every failure leaves in the spec's envelope; anything unexpected is logged and reported as a system error. */
export const onError: ErrorHandler<AppEnv> = (error, c) => {
  const apiError =
    error instanceof ApiError ? error : new ApiError(500, GENERAL.systemError);
  if (!(error instanceof ApiError)) {
    console.error(JSON.stringify({ event: 'unhandled_error', reqid: c.var.reqid, error: String(error), stack: error.stack }));
  }
  const style = c.var.errorStyle ?? 'data';
  return c.json(
    {
      status: 'fail',
      method: c.var.method ?? '',
      error: [apiError.entry(style)],
      ...(style === 'search' ? { reqid: c.var.reqid } : {}),
    },
    apiError.httpStatus,
  );
};

export const notFound: NotFoundHandler<AppEnv> = (c) =>
  c.json({ status: 'fail', method: '', error: [{ error_code: 404, error_message: 'No such endpoint.' }] }, 404);
