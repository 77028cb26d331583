import { describe, expect, it } from 'vitest';
import { basicAuth, call, createApp, insert } from './helpers';

const errorOf = async (response: Response): Promise<unknown> => ((await response.json()) as { error: unknown[] }).error[0];

describe('authentication', () => {
  it('rejects a wrong secret key', async () => {
    const app = await createApp();
    const response = await call('/search?im_name=x', { headers: basicAuth({ ...app, secret_key: 'wrong' }) });
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toBe('Invalid access key or secret key.');
  });

  it('rejects an unknown access key', async () => {
    const response = await call('/insert/status/1', { headers: basicAuth({ access_key: 'nobody', secret_key: 'x' }) });
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toMatchObject({ error_message: 'Invalid access key or secret key.' });
  });

  it('rejects a call without credentials', async () => {
    const response = await call('/search?im_name=x');
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ status: 'fail', method: 'search', error: ['Unauthorized.'] });
  });

  it('refuses the app key on data endpoints', async () => {
    const app = await createApp();
    const form = new URLSearchParams({ access_key: app.app_key, 'im_name[0]': 'a', 'im_url[0]': 'http://127.0.0.1/a.jpg' });
    const response = await call('/insert', { method: 'POST', body: form });
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toMatchObject({ error_message: 'Unauthorized.' });
    const status = await call(`/insert/status/1?access_key=${app.app_key}`);
    expect(status.status).toBe(401);
  });

  it('admits the app key on search endpoints', async () => {
    const app = await createApp();
    const response = await call(`/search?im_name=missing&access_key=${app.app_key}`);
    expect(response.status).toBe(404);
    expect(await errorOf(response)).toBe('Image not found with im_name.');
  });

  it('rejects a wrong app key, and an app key used as a secret key', async () => {
    const app = await createApp();
    const response = await call(`/search?im_name=x&access_key=${app.app_key}x`);
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toBe('Invalid access key or secret key.');
    const inserted = await insert({ ...app, secret_key: app.app_key }, [{ im_name: 'a', im_url: 'http://127.0.0.1/a.jpg' }]);
    expect(inserted.status).toBe(401);
  });

  it('carries the request id in X-Log-ID and the search body', async () => {
    const app = await createApp();
    const response = await call('/search?im_name=x', { headers: basicAuth(app) });
    const body = await response.json<{ reqid: string }>();
    expect(body.reqid).toMatch(/^[0-9a-f]{32}$/);
    expect(response.headers.get('x-log-id')).toBe(body.reqid);
  });
});
