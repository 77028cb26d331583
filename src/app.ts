import { Hono } from 'hono';
import { timing } from 'hono/timing';
import type { AppEnv } from './env';
import { browserCors } from './http/cors';
import { notFound, onError, requestId, requestLog } from './http/middleware';
import { adminRoutes } from './routes/admin';
import { dataRoutes } from './routes/data';
import { colorSearchRoutes } from './routes/color-search';
import { consoleRoutes } from './routes/console';
import { imageSearchRoutes } from './routes/image-search';
import { openApiRoutes } from './routes/openapi';
import { searchRoutes } from './routes/search';
import { textSearchRoutes } from './routes/text-search';

export const app = new Hono<AppEnv>();

// Server-Timing on every answer: the upload searches name their steps (inference, index, keep), for callers and the bench.
app.use('*', requestId, requestLog, timing({ totalDescription: 'Worker' }));
// The endpoints that admit an app key (authenticate({ allowAppKey: true })) are the ones browsers call.
for (const path of ['/search', '/recommendation', '/uploadsearch', '/discoversearch', '/colorsearch', '/textsearch', '/image']) app.use(path, browserCors);
app.onError(onError);
app.notFound(notFound);

app.route('/admin', adminRoutes);
app.route('/', dataRoutes);
app.route('/', searchRoutes);
app.route('/', imageSearchRoutes);
app.route('/', colorSearchRoutes);
app.route('/', textSearchRoutes);
app.route('/', openApiRoutes);
app.route('/', consoleRoutes);
