import { cors } from 'hono/cors';

/**
 * CORS for the endpoints a browser may call with an app key (DESIGN.md: the search endpoints): any origin, since
 * an app key is meant to be public, but no `Authorization` header across origins, so a page never sends an
 * application's secret key from a browser.
 */
export const browserCors = cors({
  origin: '*',
  allowMethods: ['GET', 'POST'],
  allowHeaders: ['Content-Type'],
  exposeHeaders: ['X-Log-ID'],
  maxAge: 86_400,
});
