import { afterEach, describe, expect, it, vi } from 'vitest';
import { basicAuth, call, createApp, fixtureUrl, insertAndWait } from './helpers';

/** What browser clients and operators rely on: CORS on the app-key endpoints, and one log line per request. */

describe('CORS', () => {
  it('answers a preflight for the search endpoints from any origin, without Authorization', async () => {
    for (const path of ['/search', '/recommendation', '/uploadsearch', '/discoversearch', '/colorsearch', '/image']) {
      const response = await call(path, {
        method: 'OPTIONS',
        headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      expect(response.status, path).toBe(204);
      expect(response.headers.get('access-control-allow-origin'), path).toBe('*');
      // The official JavaScript SDK sends Accept and X-Requested-With; Authorization is never allowed.
      const allowed = response.headers.get('access-control-allow-headers')?.toLowerCase().split(',').map((name) => name.trim());
      expect(allowed, path).toEqual(['content-type', 'accept', 'x-requested-with']);
    }
  });

  it('lets a page read a search answer and its X-Log-ID', async () => {
    const app = await createApp('cors');
    const response = await call(`/colorsearch?color=ff0000&access_key=${app.app_key}`, { headers: { origin: 'https://shop.example' } });
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-expose-headers')).toContain('X-Log-ID');
  });

  it('gives the data and admin endpoints no CORS at all', async () => {
    for (const path of ['/insert', '/remove', '/insert/status/1', '/admin/apps']) {
      const response = await call(path, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
      expect(response.headers.get('access-control-allow-origin'), path).toBeNull();
    }
  });
});

describe('request logs', () => {
  afterEach(() => vi.restoreAllMocks());

  const requestLines = (spy: { mock: { calls: unknown[][] } }) =>
    spy.mock.calls
      .map(([line]) => String(line))
      .filter((line) => line.includes('"event":"request"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('writes one JSON line per request with its id, application, endpoint, status, failure and time, and no key', async () => {
    const app = await createApp('logs');
    await insertAndWait(app, [{ im_name: 'logged', im_url: fixtureUrl('/images/skimage_chelsea.jpg') }]);
    const log = vi.spyOn(console, 'log');

    const found = await call(`/search?im_name=logged&access_key=${app.app_key}`);
    const missing = await call('/search?im_name=nothing-here', { headers: basicAuth(app) });
    const unauthorized = await call('/insert', { method: 'POST', headers: basicAuth({ access_key: app.access_key, secret_key: 'not-the-secret-5f2c' }) });
    const removedNothing = await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': 'nothing-here' }) });

    const lines = requestLines(log);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatchObject({ reqid: found.headers.get('x-log-id'), app: app.app_id, endpoint: 'search', http: 'GET /search', status: 200 });
    expect(lines[0]).not.toHaveProperty('fail');
    // A failed answer is HTTP 200 like any envelope: the line names the failure.
    expect(lines[1]).toMatchObject({ reqid: missing.headers.get('x-log-id'), app: app.app_id, endpoint: 'search', status: 200, fail: 'Image not found with im_name.' });
    expect(lines[2]).toMatchObject({ reqid: unauthorized.headers.get('x-log-id'), app: null, endpoint: 'insert', status: 200, fail: 'Invalid access key or secret key.' });
    // A failure the route answers itself (every name refused) is logged with its first message too.
    expect(lines[3]).toMatchObject({ reqid: removedNothing.headers.get('x-log-id'), endpoint: 'remove', status: 200, fail: 'Image not found with im_name.' });
    for (const line of lines) expect(typeof line.ms).toBe('number');
    const logged = JSON.stringify(log.mock.calls);
    for (const secret of [app.app_key, app.secret_key, 'not-the-secret-5f2c']) expect(logged).not.toContain(secret);
  });
});
