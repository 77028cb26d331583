import { Hono } from 'hono';
import type { AppEnv } from './env';
import { notFound, onError, requestId } from './http/middleware';
import { adminRoutes } from './routes/admin';
import { dataRoutes } from './routes/data';
import { colorSearchRoutes } from './routes/color-search';
import { imageSearchRoutes } from './routes/image-search';
import { searchRoutes } from './routes/search';

export const app = new Hono<AppEnv>();

app.use('*', requestId);
app.onError(onError);
app.notFound(notFound);

app.route('/admin', adminRoutes);
app.route('/', dataRoutes);
app.route('/', searchRoutes);
app.route('/', imageSearchRoutes);
app.route('/', colorSearchRoutes);
