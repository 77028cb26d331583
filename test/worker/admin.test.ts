import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { adminHeaders, call, createApp } from './helpers';

describe('admin API', () => {
  it('refuses calls without the admin bearer token', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', 'Basic dGVzdDp0ZXN0']) {
      const response = await call('/admin/apps', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ name: 'x' }),
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ status: 'fail', method: 'admin', error: ['Unauthorized.'] });
    }
  });

  it('creates an application whose secrets are stored only as digests', async () => {
    const credentials = await createApp('shop');
    expect(credentials).toMatchObject({ app_id: expect.stringMatching(/^app_/) });
    for (const key of ['access_key', 'secret_key', 'app_key'] as const) expect(credentials[key]).toMatch(/^[0-9a-f]{32,64}$/);

    const row = await env.DB.prepare('SELECT * FROM apps WHERE id = ?').bind(credentials.app_id).first<Record<string, string>>();
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(credentials.secret_key);
    expect(stored).not.toContain(credentials.app_key);
  });

  it('sets and reads back the schema, never the secrets', async () => {
    const credentials = await createApp('shop', [
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float' },
    ]);
    const response = await call(`/admin/apps/${credentials.app_id}`, { headers: adminHeaders });
    expect(response.status).toBe(200);
    const body = await response.json<Record<string, unknown>>();
    expect(body).toMatchObject({
      app_id: credentials.app_id,
      name: 'shop',
      schema: {
        fields: [
          { name: 'brand', type: 'string', searchable: true },
          { name: 'price', type: 'float', searchable: false },
        ],
      },
    });
    expect(JSON.stringify(body)).not.toContain(credentials.secret_key);
  });

  it('rejects a malformed schema with a clear message', async () => {
    const { app_id } = await createApp();
    const response = await call(`/admin/apps/${app_id}/schema`, {
      method: 'PUT',
      headers: adminHeaders,
      body: JSON.stringify({ fields: [{ name: 'size', type: 'blob' }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ status: 'fail', method: 'admin', error: [expect.stringContaining('fields.0.type')] });
  });

  it('refuses a body with a key it does not know, naming it, and changes nothing', async () => {
    const { app_id } = await createApp();
    const send = async (method: string, path: string, body: object) => {
      const response = await call(path, { method, headers: adminHeaders, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const refused = (error: string) => ({ status: 400, body: { status: 'fail', method: 'admin', error: [error] } });
    const SETTINGS = 'image_limit, pending_limit, searches_per_minute, upload_bytes_per_minute, text_default_operator';
    expect(await send('PATCH', `/admin/apps/${app_id}`, { unkown_limit: 1 })).toEqual(refused(`body: unknown key "unkown_limit"; the keys are ${SETTINGS}`));
    // A known key beside an unknown one is not applied either.
    expect(await send('PATCH', `/admin/apps/${app_id}`, { image_limit: 5, imagelimit: 5, x: 1 })).toEqual(
      refused(`body: unknown keys "imagelimit", "x"; the keys are ${SETTINGS}`),
    );
    expect(await send('PUT', `/admin/apps/${app_id}/schema`, { fields: [{ name: 'brand', type: 'string', searchble: true }] })).toEqual(
      refused('fields.0: unknown key "searchble"; the keys are name, type, searchable'),
    );
    expect(await send('PUT', `/admin/apps/${app_id}/schema`, { fields: [], extra: true })).toEqual(refused('body: unknown key "extra"; the keys are fields'));
    expect(await send('POST', '/admin/apps', { name: 'x', embedModel: 'other' })).toEqual(refused('body: unknown key "embedModel"; the keys are name, embed_model'));
    expect(await send('POST', `/admin/apps/${app_id}/reindex`, { embed_model: 'any', force: true })).toEqual(refused('body: unknown key "force"; the keys are embed_model'));

    const described = await call(`/admin/apps/${app_id}`, { headers: adminHeaders });
    expect(await described.json()).toMatchObject({ image_limit: null, schema: { fields: [] } });
  });

  it('answers 404 for an unknown application', async () => {
    const response = await call('/admin/apps/app_missing', { headers: adminHeaders });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ status: 'fail', method: 'admin', error: ['App not found.'] });
  });
});
