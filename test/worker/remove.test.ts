import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { imageVectors } from '../../src/storage/vectors';
import { basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, search, waitForTransaction, type Credentials, catalogOf } from './helpers';

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
    const { results } = await (await catalogOf(app)).prepare('SELECT id, im_name, blob_key FROM images WHERE app_id = ?')
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

  it('overtaking inserts of its names still waiting, fails them with 111 rather than counting them a success', async () => {
    const other = await createApp('remove-overtakes');
    const names = Array.from({ length: 20 }, (_, i) => `waiting${i}`);
    const started = Date.now();
    const inserted = await insert(other, names.map((name, i) => ({ im_name: name, im_url: fixtureUrl(`/slow/${FILES[i % FILES.length]}`) })));
    const { trans_id: transId } = await inserted.json<{ trans_id: number }>();
    const removed = await remove(other, names);
    // Each download is answered two seconds after it was asked: a remove answered sooner overtook every image.
    const overtookAll = Date.now() - started < 2000;

    // Each name was in the collection or waiting to be: the remove removed it.
    expect(removed).toEqual({ status: 200, body: { status: 'OK', method: 'remove', total: 20, result: [], error: [] } });
    const status = await waitForTransaction(other, transId);
    // An image done before the remove came was searchable, then removed; every other one failed, with the reason.
    expect(status.success_count + status.fail_count).toBe(20);
    expect(status.error_list).toHaveLength(status.fail_count);
    for (const entry of status.error_list) {
      expect(entry).toEqual({ im_name: expect.stringMatching(/^waiting/), error_code: 111, error_message: 'Image removed before it was processed.' });
    }
    if (overtookAll) expect(status).toMatchObject({ success_count: 0, fail_count: 20 });
    expect((await search(other, 'im_name=waiting0')).body.error).toEqual(['Image not found with im_name.']);
    const stored = await (await catalogOf(other)).prepare('SELECT count(*) AS n FROM images WHERE app_id = ?').bind(other.app_id).first<{ n: number }>();
    expect(stored!.n).toBe(0);
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
