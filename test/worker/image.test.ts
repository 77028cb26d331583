import { beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, call, createApp, fixtureUrl, insertAndWait, type Credentials } from './helpers';

const FILE = 'opencv-doc_plant.jpg';

describe('GET /image (the console thumbnails)', () => {
  let app: Credentials;
  let original: Uint8Array;

  beforeAll(async () => {
    app = await createApp('thumbnails');
    await insertAndWait(app, [{ im_name: 'plant', im_url: fixtureUrl(`/images/${FILE}`) }]);
    original = new Uint8Array(await (await fetch(fixtureUrl(`/images/${FILE}`))).arrayBuffer());
  });

  it('answers the stored bytes with their type, to Basic auth and to the app key alike', async () => {
    const basic = await call('/image?im_name=plant', { headers: basicAuth(app) });
    const appKey = await call(`/image?im_name=plant&access_key=${app.app_key}`);
    for (const response of [basic, appKey]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/jpeg');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(new Uint8Array(await response.arrayBuffer())).toEqual(original);
    }
  });

  it('answers 404 in the envelope for an unknown name, and for another application\'s image', async () => {
    const other = await createApp('other');
    for (const [query, credentials] of [['im_name=nothing', app], ['im_name=plant', other]] as const) {
      const response = await call(`/image?${query}`, { headers: basicAuth(credentials) });
      // The console's image endpoint keeps its HTTP statuses: no official client reads it.
      expect(response.status).toBe(404);
      const body = await response.json();
      expect(body).toEqual({ status: 'fail', method: 'image', error: ['Image not found with im_name.'] });
    }
  });

  it('refuses a call without credentials, and asks for im_name', async () => {
    const anonymous = await call('/image?im_name=plant');
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ status: 'fail', method: 'image', error: ['Unauthorized.'] });
    const nameless = await call('/image', { headers: basicAuth(app) });
    expect(nameless.status).toBe(400);
    expect(await nameless.json()).toEqual({ status: 'fail', method: 'image', error: ['Image not found with im_name.'] });
  });
});
