import { describe, expect, it } from 'vitest';
import { basicAuth, call, createApp, insert } from './helpers';

/** The one error entry of a failed answer, which the API endpoints give with HTTP 200 and `status: 'fail'`. */
const errorOf = async (response: Response): Promise<unknown> => {
  expect(response.status).toBe(200);
  const body = (await response.json()) as { status: string; error: unknown[] };
  expect(body.status).toBe('fail');
  expect(body.error).toHaveLength(1);
  return body.error[0];
};

describe('authentication', () => {
  it('rejects a wrong secret key', async () => {
    const app = await createApp();
    const response = await call('/search?im_name=x', { headers: basicAuth({ ...app, secret_key: 'wrong' }) });
    expect(await errorOf(response)).toBe('Invalid access key or secret key.');
  });

  it('rejects an unknown access key', async () => {
    const response = await call('/insert/status/1', { headers: basicAuth({ access_key: 'nobody', secret_key: 'x' }) });
    expect(await errorOf(response)).toBe('Invalid access key or secret key.');
  });

  it('rejects a call without credentials', async () => {
    const response = await call('/search?im_name=x');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'fail',
      method: 'search',
      error: ['Unauthorized.'],
      page: 1,
      limit: 10,
      total: 0,
      result: [],
      reqid: response.headers.get('x-log-id'),
    });
  });

  it('refuses the app key on data endpoints', async () => {
    const app = await createApp();
    const form = new URLSearchParams({ access_key: app.app_key, 'im_name[0]': 'a', 'im_url[0]': 'http://127.0.0.1/a.jpg' });
    const response = await call('/insert', { method: 'POST', body: form });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'fail', method: 'insert', error: ['Unauthorized.'], total: 0, result: [] });
    const status = await call(`/insert/status/1?access_key=${app.app_key}`);
    expect(status.status).toBe(200);
    expect(await status.json()).toEqual({ status: 'fail', method: 'insert/status', error: ['Unauthorized.'], result: [] });
  });

  it('admits the app key on search endpoints', async () => {
    const app = await createApp();
    const response = await call(`/search?im_name=missing&access_key=${app.app_key}`);
    expect(await errorOf(response)).toBe('Image not found with im_name.');
  });

  it('rejects a wrong app key, and an app key used as a secret key', async () => {
    const app = await createApp();
    const response = await call(`/search?im_name=x&access_key=${app.app_key}x`);
    expect(await errorOf(response)).toBe('Invalid access key or secret key.');
    const inserted = await insert({ ...app, secret_key: app.app_key }, [{ im_name: 'a', im_url: 'http://127.0.0.1/a.jpg' }]);
    expect(inserted.status).toBe(200);
    expect(await inserted.json()).toEqual({ status: 'fail', method: 'insert', error: ['Invalid access key or secret key.'], total: 0, result: [] });
  });

  it('carries the request id in X-Log-ID and the search body', async () => {
    const app = await createApp();
    const response = await call('/search?im_name=x', { headers: basicAuth(app) });
    const body = await response.json<{ reqid: string }>();
    expect(body.reqid).toMatch(/^[0-9a-f]{32}$/);
    expect(response.headers.get('x-log-id')).toBe(body.reqid);
  });
});
