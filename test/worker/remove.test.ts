import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { imageVectors } from '../../src/storage/vectors';
import { basicAuth, call, createApp, fixtureUrl, insertAndWait, search, type Credentials } from './helpers';

const remove = async (app: Credentials, names: string[]) => {
  const form = new URLSearchParams();
  names.forEach((name, index) => form.append(`im_name[${index}]`, name));
  const response = await call('/remove', { method: 'POST', headers: basicAuth(app), body: form });
  return { status: response.status, body: await response.json<{ status: string; method: string; total: number; result: unknown[]; error: unknown[] }>() };
};

const FILES = ['animals_birds_hen.png', 'animals_birds_rooster.png', 'animals_mammals_cats_tiger.png', 'food_fruit_avocado.png'];

describe('POST /remove', () => {
  let app: Credentials;
  let ids: Map<string, string>;
  let blobKeys: Map<string, string>;

  beforeAll(async () => {
    app = await createApp();
    await insertAndWait(app, FILES.map((file, i) => ({ im_name: `img${i}`, im_url: fixtureUrl(`/images/${file}`) })));
    const { results } = await env.DB.prepare('SELECT id, im_name, blob_key FROM images WHERE app_id = ?')
      .bind(app.app_id)
      .all<{ id: number; im_name: string; blob_key: string }>();
    ids = new Map(results.map((row) => [row.im_name, String(row.id)]));
    blobKeys = new Map(results.map((row) => [row.im_name, row.blob_key]));
  });

  it('removes an image from every search at once, with its vector and stored bytes', async () => {
    expect((await search(app, 'im_name=img0&limit=10')).body.result.map((item) => item.im_name)).toContain('img1');
    expect(await env.BLOBS.head(blobKeys.get('img1')!)).not.toBeNull();

    expect(await remove(app, ['img1'])).toEqual({ status: 200, body: { status: 'OK', method: 'remove', total: 1, result: [], error: [] } });

    expect((await search(app, 'im_name=img0&limit=10')).body.result.map((item) => item.im_name)).not.toContain('img1');
    expect(await search(app, 'im_name=img1')).toMatchObject({ status: 200, body: { status: 'fail', error: ['Image not found with im_name.'] } });
    expect(await imageVectors(env, env.EMBED_MODEL).getByIds([ids.get('img1')!])).toEqual([]);
    expect(await env.BLOBS.head(blobKeys.get('img1')!)).toBeNull();
  });

  it('answers warning with a 102 entry per unknown name, counting only what it removed', async () => {
    const { status, body } = await remove(app, ['img2', 'never-inserted', 'img2']);
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'warning',
      method: 'remove',
      total: 1,
      result: [],
      error: [
        { index: 1, im_name: 'never-inserted', error_code: 102, error_message: 'Image not found with im_name.' },
        { index: 2, im_name: 'img2', error_code: 102, error_message: 'Image not found with im_name.' },
      ],
    });
  });

  it('answers fail when nothing was removed, and never touches another application', async () => {
    const stranger = await createApp();
    const { status, body } = await remove(stranger, ['img3']);
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'fail',
      method: 'remove',
      total: 0,
      result: [],
      error: [{ index: 0, im_name: 'img3', error_code: 102, error_message: 'Image not found with im_name.' }],
    });
    expect((await search(app, 'im_name=img3')).body.status).toBe('OK');
  });

  it('needs at least one im_name, at most 100, and the secret key', async () => {
    const failed = (message: string) => ({ status: 200, body: { status: 'fail', method: 'remove', total: 0, result: [], error: [message] } });
    expect(await remove(app, [])).toEqual(failed('im_name[0] is required.'));
    expect(await remove(app, Array.from({ length: 101 }, (_, i) => `n${i}`))).toEqual(failed('At most 100 images can be removed per call.'));
    const viaAppKey = await call(`/remove?access_key=${app.app_key}`, { method: 'POST', body: new URLSearchParams({ 'im_name[0]': 'img3' }) });
    expect({ status: viaAppKey.status, body: await viaAppKey.json() }).toEqual(failed('Unauthorized.'));
    expect((await search(app, 'im_name=img3')).body.status).toBe('OK');
  });
});
