import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { basicAuth, call, createApp, fixtureUrl, insert, waitForTransaction } from './helpers';

type InsertBody = { status: string; method: string; trans_id?: number; total: number; error: Record<string, unknown>[] };

describe('POST /insert validation', () => {
  it('accepts the good images of a call and reports each bad one (warning)', async () => {
    const app = await createApp('shop', [{ name: 'price', type: 'float' }]);
    const response = await insert(app, [
      { im_name: 'good', im_url: fixtureUrl('/images/animals_birds_hen.png'), price: '9.5' },
      { im_name: 'bad name!', im_url: fixtureUrl('/images/x.png') },
      { im_name: 'no-url' },
      { im_name: 'x'.repeat(129), im_url: fixtureUrl('/images/x.png') },
      { im_name: 'long-value', im_url: fixtureUrl('/images/x.png'), note: 'y'.repeat(5001) },
      { im_name: 'wrong-type', im_url: fixtureUrl('/images/x.png'), price: 'cheap' },
      { im_name: 'many-keys', im_url: fixtureUrl('/images/x.png'), ...Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`f${i}`, 'v'])) },
    ]);
    expect(response.status).toBe(200);
    const body = await response.json<InsertBody>();
    expect(body).toMatchObject({ status: 'warning', method: 'insert', total: 1 });
    expect(body.error).toEqual([
      { index: 1, im_name: 'bad name!', error_code: 107, error_message: 'Invalid im_name.' },
      { index: 2, im_name: 'no-url', error_code: 108, error_message: 'Missing im_url.' },
      { index: 3, im_name: 'x'.repeat(129), error_code: 106, error_message: 'im_name exceeds length limit.' },
      { index: 4, im_name: 'long-value', error_code: 106, error_message: 'note exceeds length limit.' },
      { index: 5, im_name: 'wrong-type', error_code: 109, error_message: 'price should be of data type float.' },
      { index: 6, im_name: 'many-keys', error_code: 105, error_message: 'Number of parameters for image exceeds maximum limit of 32.' },
    ]);
  });

  it('fails a call with nothing valid (104) and a call over 100 images (103), keeping nothing', async () => {
    const app = await createApp();
    const nothing = await insert(app, [{ im_name: 'no-url' }]);
    expect(nothing.status).toBe(400);
    const nothingBody = await nothing.json<InsertBody>();
    expect(nothingBody).toMatchObject({ status: 'fail', method: 'insert', total: 0 });
    expect(nothingBody.error.at(-1)).toEqual({ error_code: 104, error_message: 'No image inserted.' });

    const tooMany = await insert(app, Array.from({ length: 101 }, (_, i) => ({ im_name: `n${i}`, im_url: fixtureUrl('/images/a.png') })));
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({
      status: 'fail',
      error: [{ error_code: 103, error_message: 'Exceeded maximum insert batch size of 100.' }],
    });
    const kept = await env.DB.prepare('SELECT count(*) AS n FROM insert_transactions WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
    expect(kept?.n).toBe(0);
  });
});

describe('insert processing and /insert/status', () => {
  it('settles every image: failures land in error_list with 201, 202 and 203', async () => {
    const app = await createApp();
    const response = await insert(app, [
      { im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') },
      { im_name: 'gone', im_url: fixtureUrl('/status/404') },
      { im_name: 'not-an-image', im_url: fixtureUrl('/images/manifest.json') },
      { im_name: 'tiny', im_url: fixtureUrl('/images/food_fruit_apple_fuji.png') },
    ]);
    const { trans_id } = await response.json<{ trans_id: number }>();
    const status = await waitForTransaction(app, trans_id);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: 3, total: 4 });
    expect(status.error_list).toEqual([
      { im_name: 'gone', error_code: 201, error_message: 'Could not download the image from im_url.' },
      { im_name: 'not-an-image', error_code: 202, error_message: 'Unsupported image format.' },
      { im_name: 'tiny', error_code: 203, error_message: 'Unsupported image dimension.' },
    ]);
  });

  it('pages through error_list', async () => {
    const app = await createApp();
    const response = await insert(app, Array.from({ length: 5 }, (_, i) => ({ im_name: `gone${i}`, im_url: fixtureUrl('/status/404') })));
    const { trans_id } = await response.json<{ trans_id: number }>();
    await waitForTransaction(app, trans_id);
    const page = await call(`/insert/status/${trans_id}?error_page=3&error_limit=2`, { headers: basicAuth(app) });
    const body = await page.json<{ result: { error_list: { im_name: string }[]; error_page: number; error_limit: number; start_time: string }[] }>();
    expect(body.result[0]).toMatchObject({ error_page: 3, error_limit: 2, error_list: [{ im_name: 'gone4' }] });
    expect(body.result[0]?.start_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
  });

  it("answers 101 for an unknown transaction and for another application's", async () => {
    const owner = await createApp();
    const other = await createApp();
    const { trans_id } = await (await insert(owner, [{ im_name: 'gone', im_url: fixtureUrl('/status/404') }])).json<{ trans_id: number }>();
    for (const [app, id] of [[owner, '12345'], [owner, 'abc'], [other, String(trans_id)]] as const) {
      const response = await call(`/insert/status/${id}`, { headers: basicAuth(app) });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({
        status: 'fail',
        method: 'insert/status',
        error: [{ error_code: 101, error_message: 'Transaction not found with trans_id.' }],
      });
    }
  });
});
