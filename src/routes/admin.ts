import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { createAppBody, schemaBody, settingsBody } from '../admin/bodies';
import { requireAdmin } from '../auth/admin';
import { newAppKeys } from '../auth/keys';
import type { AppEnv } from '../env';
import { invalidParameter, ApiError } from '../http/envelope';
import { endpoint } from '../http/middleware';
import { createApp, getApp, getSchema, replaceSchema, updateSettings, type AppRecord } from '../storage/apps';

const describe = (app: AppRecord) => ({
  app_id: app.id,
  name: app.name,
  access_key: app.accessKey,
  created_at: app.createdAt,
  image_limit: app.limits.imageLimit,
  pending_limit: app.limits.pendingLimit,
  searches_per_minute: app.limits.searchesPerMinute,
  upload_bytes_per_minute: app.limits.uploadBytesPerMinute,
  text_default_operator: app.textDefaultOperator,
});

async function readJson<T>(c: Context<AppEnv>, schema: z.ZodType<T>): Promise<T> {
  const body: unknown = await c.req.json().catch(() => {
    throw invalidParameter('The request body must be JSON.');
  });
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidParameter(`${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** The "dashboard" of the spec, as an HTTP API (docs/decisions.md). */
export const adminRoutes = new Hono<AppEnv>();

adminRoutes.use('*', endpoint('admin', { httpStatuses: true }), requireAdmin);

adminRoutes.post('/apps', async (c) => {
  const { name } = await readJson(c, createAppBody);
  // The secret key and the app key are answered this once: only their digests are kept.
  const { credentials, stored } = await newAppKeys(name);
  await createApp(c.env.DB, stored);
  return c.json({ status: 'OK', ...credentials, name }, 201);
});

async function appOrNotFound(db: D1Database, appId: string): Promise<AppRecord> {
  const app = await getApp(db, appId);
  if (!app) throw new ApiError(404, 'App not found.');
  return app;
}

adminRoutes.get('/apps/:app_id', async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  return c.json({ status: 'OK', ...describe(app), schema: { fields: await getSchema(c.env.DB, app.id) } });
});

/**
 * Operator settings: `image_limit` (collection size), `pending_limit` (images waiting to be processed),
 * `searches_per_minute` and `upload_bytes_per_minute` (search calls and uploaded query-image bytes a minute), null
 * lifting one; `text_default_operator` (AND or OR) between adjacent words of a text `fq`.
 */
adminRoutes.patch('/apps/:app_id', async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const body = await readJson(c, settingsBody);
  await updateSettings(c.env.DB, app.id, {
    imageLimit: body.image_limit,
    pendingLimit: body.pending_limit,
    searchesPerMinute: body.searches_per_minute,
    uploadBytesPerMinute: body.upload_bytes_per_minute,
    textDefaultOperator: body.text_default_operator,
  });
  return c.json({ status: 'OK', ...describe(await appOrNotFound(c.env.DB, app.id)) });
});

adminRoutes.put('/apps/:app_id/schema', async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { fields } = await readJson(c, schemaBody);
  await replaceSchema(c.env.DB, app.id, fields);
  return c.json({ status: 'OK', app_id: app.id, schema: { fields } });
});
