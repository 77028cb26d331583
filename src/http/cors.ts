import { cors } from 'hono/cors';

/**
 * CORS for the endpoints a browser may call with an app key (docs/decisions.md: the search endpoints): any origin,
 * since an app key is meant to be public, but no `Authorization` header across origins, so a page never sends an
 * application's secret key from a browser. The official JavaScript SDK sends `X-Requested-With` and `Accept` on every
 * call, which makes each one preflighted.
 */
export const browserCors = cors({
  origin: '*',
  allowMethods: ['GET', 'POST'],
  allowHeaders: ['Content-Type', 'Accept', 'X-Requested-With'],
  exposeHeaders: ['X-Log-ID'],
  maxAge: 86_400,
});
