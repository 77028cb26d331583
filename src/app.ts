import { Hono } from 'hono';
import { timing } from 'hono/timing';
import type { AppEnv } from './env';
import { browserCors } from './http/cors';
import { notFound, onError, requestId, requestLog } from './http/middleware';
import { countRoundTrips } from './http/round-trips';
import { browserPaths, mountRoutes } from './http/route';
import { ROUTES } from './routes';

export const app = new Hono<AppEnv>();

// Server-Timing on every answer: the round trips to D1 and the vector index, and the upload searches' steps (inference,
// index, keep), for callers and the bench.
app.use('*', requestId, requestLog, timing({ totalDescription: 'Worker' }), countRoundTrips);
for (const path of browserPaths(ROUTES)) app.use(path, browserCors);
app.onError(onError);
app.notFound(notFound);

mountRoutes(app, ROUTES);
