import { createMessageBatch, env } from 'cloudflare:test';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import worker from '../../src/index';
import { digestsEqual } from '../../src/auth/keys';
import type { InsertMessage } from '../../src/ingest/message';
import { createTransaction } from '../../src/storage/transactions';
import { adminHeaders, basicAuth, call, createApp, discoversearch, fixtureUrl, imageBytes, insert, search, uploadsearch, waitForTransaction, type Credentials, type SearchBody, catalogOf, appOf } from './helpers';

/**
 * Two applications, A and B, each with an image named `shared` (different pictures) and one of its own. Every image
 * carries its owner in the fetchable field `owner`, so an image of the other application in any answer shows.
 */

const IMAGES = {
  A: { shared: 'animals_birds_hen.png', 'a-only': 'animals_mammals_cats_tiger.png' },
  B: { shared: 'food_fruit_avocado.png', 'b-only': 'skimage_coffee.jpg' },
};
type Owner = keyof typeof IMAGES;
const OWNERS = ['A', 'B'] as const;

const apps = {} as Record<Owner, Credentials>;
const transIds = {} as Record<Owner, number>;

/** Everything logged while this file runs: the Worker's code runs in this isolate, on the console spied on here. */
const logged: string[] = [];
const asText = (arg: unknown): string => (typeof arg === 'string' ? arg : (JSON.stringify(arg) ?? String(arg)));

type Result = { value_map?: Record<string, string> };
type RemoveBody = { status: string; total: number; error: Record<string, unknown>[] };

async function remove(names: string[], auth: { headers?: Record<string, string>; fields?: Record<string, string> }) {
  const form = new URLSearchParams(auth.fields);
  names.forEach((name, index) => form.append(`im_name[${index}]`, name));
  const response = await call('/remove', { method: 'POST', headers: auth.headers ?? {}, body: form });
  return { status: response.status, body: await response.json<RemoveBody>() };
}

const rowOf = async (owner: Owner, imName: string) =>
  (await catalogOf(apps[owner])).prepare('SELECT im_url, metadata, blob_key FROM images WHERE app_id = ? AND im_name = ?')
    .bind(apps[owner].app_id, imName)
    .first<{ im_url: string; metadata: string; blob_key: string }>();

async function imageCount(owner: Owner): Promise<number> {
  const count = (await catalogOf(apps[owner])).prepare('SELECT count(*) AS n FROM images WHERE app_id = ?').bind(apps[owner].app_id);
  return (await count.first<{ n: number }>())!.n;
}

/** Every result is the caller's own, and `total` (when given) counts its whole collection and nothing more. */
async function expectOnlyOwn(owner: Owner, results: Result[], total?: number): Promise<void> {
  expect(results.length).toBeGreaterThan(0);
  expect(results.map((item) => item.value_map?.owner)).toEqual(results.map(() => owner));
  if (total !== undefined) expect(total).toBe(await imageCount(owner));
}

beforeAll(async () => {
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void logged.push(args.map(asText).join(' ')));
  }
  for (const owner of OWNERS) {
    apps[owner] = await createApp(`tenant-${owner}`, [{ name: 'owner', type: 'string' }]);
    const images = Object.entries(IMAGES[owner]).map(([name, file]) => ({
      im_name: name,
      im_url: fixtureUrl(`/images/${file}`),
      owner,
    }));
    transIds[owner] = (await (await insert(apps[owner], images)).json<{ trans_id: number }>()).trans_id;
  }
  for (const owner of OWNERS) {
    expect(await waitForTransaction(apps[owner], transIds[owner])).toMatchObject({ success_count: 2 });
  }
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe('one application never sees another’s data', () => {
  it('/insert/status: a trans_id is known to its own application only', async () => {
    for (const [owner, stranger] of [['A', 'B'], ['B', 'A']] as const) {
      const own = await call(`/insert/status/${transIds[owner]}`, { headers: basicAuth(apps[owner]) });
      expect(own.status).toBe(200);
      expect(await own.json()).toMatchObject({ status: 'OK', result: [{ total: 2 }] });
      const foreign = await call(`/insert/status/${transIds[owner]}`, { headers: basicAuth(apps[stranger]) });
      expect(foreign.status).toBe(200);
      expect(await foreign.json()).toEqual({
        status: 'fail',
        method: 'insert/status',
        error: [{ error_code: 101, error_message: 'Transaction not found with trans_id.' }],
        result: [],
      });
    }
  });

  it('/search: the same im_name means each application’s own image, and results are its own only', async () => {
    for (const owner of OWNERS) {
      const { status, body } = await search(apps[owner], 'im_name=shared&get_all_fl=true&qinfo=true&limit=100');
      expect(status).toBe(200);
      expect((body as SearchBody & { qinfo: { value_map: Result['value_map'] } }).qinfo.value_map).toEqual({ owner });
      await expectOnlyOwn(owner, body.result, body.total + 1); // the query image itself is left out
    }
  });

  it('/search: another application’s im_name is not found', async () => {
    for (const [stranger, name] of [['B', 'a-only'], ['A', 'b-only']] as const) {
      const { status, body } = await search(apps[stranger], `im_name=${name}`);
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: 'fail', error: ['Image not found with im_name.'], total: 0, result: [] });
    }
  });

  it('/uploadsearch and /discoversearch: the other application’s very image finds only one’s own', async () => {
    const foreign = { A: `/images/${IMAGES.B['b-only']}`, B: `/images/${IMAGES.A['a-only']}` };
    for (const owner of OWNERS) {
      // Detection off: the whole image is searched against the whole collection.
      const fields = { image: await imageBytes(foreign[owner]), get_all_fl: 'true', detection: ' ' };
      const upload = await uploadsearch(apps[owner], { ...fields, limit: '100' });
      expect(upload.status).toBe(200);
      await expectOnlyOwn(owner, upload.body.result as Result[], upload.body.total);
      const discover = await discoversearch(apps[owner], { ...fields, result_limit: '100' });
      expect(discover.status).toBe(200);
      expect(discover.body.objects).toHaveLength(1);
      await expectOnlyOwn(owner, discover.body.objects[0]!.result as Result[], discover.body.objects[0]!.total);
    }
  });

  it('/colorsearch: results are one’s own only', async () => {
    for (const owner of OWNERS) {
      const { status, body } = await search(apps[owner], 'color=808080&get_all_fl=true&limit=100', '/colorsearch');
      expect(status).toBe(200);
      await expectOnlyOwn(owner, body.result, body.total);
    }
  });

  it('im_id: an upload’s handle is known to its own application only', async () => {
    const { body } = await uploadsearch(apps.A, { image: await imageBytes(`/images/${IMAGES.A.shared}`) });
    expect((await uploadsearch(apps.A, { im_id: body.im_id })).body.status).toBe('OK');
    const notFound = { status: 200, body: { status: 'fail', error: ['Image not found with im_id.'] } };
    expect(await uploadsearch(apps.B, { im_id: body.im_id })).toMatchObject(notFound);
    expect(await discoversearch(apps.B, { im_id: body.im_id })).toMatchObject(notFound);
  });

  it('/insert: an im_name another application uses makes a new image, and leaves theirs as it was', async () => {
    const before = await rowOf('A', 'a-only');
    const image = { im_name: 'a-only', im_url: fixtureUrl(`/images/${IMAGES.B.shared}`), owner: 'B' };
    const { trans_id } = await (await insert(apps.B, [image])).json<{ trans_id: number }>();
    expect(await waitForTransaction(apps.B, trans_id)).toMatchObject({ success_count: 1 });
    expect(await rowOf('A', 'a-only')).toEqual(before);
    const added = await rowOf('B', 'a-only');
    expect(JSON.parse(added!.metadata)).toEqual({ owner: 'B' });
    expect(added!.blob_key).not.toBe(before!.blob_key);
  });

  it('/remove: removing a name removes only one’s own image of that name', async () => {
    const notFound = { index: 0, im_name: 'b-only', error_code: 102, error_message: 'Image not found with im_name.' };
    expect(await remove(['b-only'], { headers: basicAuth(apps.A) })).toEqual({
      status: 200,
      body: { status: 'fail', method: 'remove', total: 0, result: [], error: [notFound] },
    });
    expect(await rowOf('B', 'b-only')).not.toBeNull();

    const sharedOfA = await rowOf('A', 'shared');
    const removed = await remove(['shared'], { headers: basicAuth(apps.B) });
    expect(removed).toMatchObject({ status: 200, body: { status: 'OK', total: 1 } });
    expect(await rowOf('B', 'shared')).toBeNull();
    expect(await rowOf('A', 'shared')).toEqual(sharedOfA);
    expect(await env.BLOBS.head(sharedOfA!.blob_key)).not.toBeNull();
    expect((await search(apps.A, 'im_name=shared')).body.status).toBe('OK');
  });
});

describe('app keys (browser and mobile clients)', () => {
  const appKey = (owner: Owner): Record<string, string> => ({ access_key: apps[owner].app_key });
  const unauthorized = { status: 'fail', error: ['Unauthorized.'] };

  it('can never write or read a transaction, sent in the query or the form', async () => {
    const transactions = async (): Promise<unknown> =>
      (await catalogOf(apps.A)).prepare('SELECT count(*) AS n FROM insert_transactions WHERE app_id = ?').bind(apps.A.app_id).first();
    const before = await transactions();
    const image = { 'im_name[0]': 'by-app-key', 'im_url[0]': fixtureUrl(`/images/${IMAGES.A.shared}`) };
    for (const response of [
      await call('/insert', { method: 'POST', body: new URLSearchParams({ ...appKey('A'), ...image }) }),
      await call(`/insert?access_key=${apps.A.app_key}`, { method: 'POST', body: new URLSearchParams(image) }),
      await call(`/insert/status/${transIds.A}?access_key=${apps.A.app_key}`),
    ]) {
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject(unauthorized);
    }
    expect(await remove(['a-only'], { fields: appKey('A') })).toMatchObject({ status: 200, body: unauthorized });
    expect(await transactions()).toEqual(before);
    expect(await rowOf('A', 'a-only')).not.toBeNull();
  });

  it('can search its own application on every search endpoint', async () => {
    const byName = await call(`/search?im_name=a-only&get_all_fl=true&access_key=${apps.A.app_key}`);
    expect(byName.status).toBe(200);
    await expectOnlyOwn('A', (await byName.json<SearchBody>()).result);
    const byColor = await call(`/colorsearch?color=808080&get_all_fl=true&access_key=${apps.A.app_key}`);
    expect(byColor.status).toBe(200);
    await expectOnlyOwn('A', (await byColor.json<SearchBody>()).result);
    const image = await imageBytes(`/images/${IMAGES.B['b-only']}`);
    const upload = await uploadsearch(null, { ...appKey('A'), image, get_all_fl: 'true', detection: ' ' });
    expect(upload.status).toBe(200);
    await expectOnlyOwn('A', upload.body.result as Result[]);
    expect((await discoversearch(null, { ...appKey('A'), image })).body.status).toBe('OK');
  });

  it('is no secret key, and an access key alone is no app key', async () => {
    const invalid = ['Invalid access key or secret key.'];
    expect((await search({ ...apps.A, secret_key: apps.A.app_key }, 'im_name=a-only')).body.error).toEqual(invalid);
    expect((await search({ ...apps.A, secret_key: apps.B.secret_key }, 'im_name=a-only')).body.error).toEqual(invalid);
    const accessKeyAlone = await call(`/search?im_name=a-only&access_key=${apps.A.access_key}`);
    expect(accessKeyAlone.status).toBe(200);
    expect(await accessKeyAlone.json<SearchBody>()).toMatchObject({ status: 'fail', error: invalid });
  });
});

describe('secrets', () => {
  const sha256 = async (text: string): Promise<string> => {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
    return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  };

  it('D1 keeps only SHA-256 digests of the secret key and the app key', async () => {
    for (const owner of OWNERS) {
      const { secret_key, app_key } = apps[owner];
      const row = await env.DB.prepare('SELECT * FROM apps WHERE id = ?').bind(apps[owner].app_id).first();
      expect(row).toMatchObject({ secret_key_hash: await sha256(secret_key), app_key_hash: await sha256(app_key) });
      expect(JSON.stringify(row)).not.toContain(secret_key);
      expect(JSON.stringify(row)).not.toContain(app_key);
    }
  });

  it('digests are compared whole: a prefix, an extension or one changed character is refused', async () => {
    const digest = await sha256(apps.A.secret_key);
    const flip = (at: number): string => (digest[at] === '0' ? '1' : '0');
    const changed = (at: number): string => `${digest.slice(0, at)}${flip(at)}${digest.slice(at + 1)}`;
    expect(digestsEqual(digest, digest)).toBe(true);
    for (const other of [digest.slice(0, -1), `${digest}0`, '', changed(0), changed(digest.length - 1)]) {
      expect(digestsEqual(digest, other)).toBe(false);
    }
    for (const secret of [apps.A.secret_key.slice(0, -1), `${apps.A.secret_key}0`]) {
      const refused = await search({ ...apps.A, secret_key: secret }, 'im_name=a-only');
      expect(refused).toMatchObject({ status: 200, body: { status: 'fail', error: ['Invalid access key or secret key.'] } });
    }
  });

  it('no secret appears in anything logged: the calls above, failed logins, a failing inference call', async () => {
    const wrongInferenceSecret = `wrong-${env.INFERENCE_SECRET}`;
    const wrongSecret = `${apps.A.secret_key.slice(0, -4)}beef`;
    const wrongAppKey = `${apps.A.app_key}00`;
    const wrongAdminToken = 'not-the-admin-token';
    await search({ ...apps.A, secret_key: wrongSecret }, 'im_name=a-only');
    await call(`/search?im_name=a-only&access_key=${wrongAppKey}`);
    await call('/search?im_name=a-only', { headers: { authorization: 'Basic !!!' } });
    const wrongAdmin = { ...adminHeaders, authorization: `Bearer ${wrongAdminToken}` };
    await call('/admin/apps', { method: 'POST', headers: wrongAdmin, body: '{"name":"x"}' });
    await call('/insert/status/1', { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });

    // A consumer whose inference calls are refused (a wrong bearer secret) logs the failure and retries.
    const item = { index: 0, imName: 'logged', imUrl: fixtureUrl(`/images/${IMAGES.A.shared}`), metadata: {} };
    const transId = await createTransaction(env, await appOf(apps.A), [item]);
    const message = { id: 'log-check', timestamp: new Date(), attempts: 1, body: { transId, index: 0, database: (await appOf(apps.A)).database } };
    const batch = createMessageBatch<InsertMessage>('image-insert', [message]);
    await worker.queue(batch, { ...env, INFERENCE_SECRET: wrongInferenceSecret });
    // The spy does see the Worker's logs, so the empty lists below mean that nothing secret was logged.
    expect(logged.some((line) => line.includes('insert_item_error'))).toBe(true);

    const secrets = [
      env.ADMIN_TOKEN,
      env.INFERENCE_SECRET!,
      wrongInferenceSecret,
      wrongSecret,
      wrongAppKey,
      wrongAdminToken,
      ...OWNERS.flatMap((owner) => {
        const { access_key, secret_key, app_key } = apps[owner];
        return [secret_key, app_key, btoa(`${access_key}:${secret_key}`)];
      }),
    ];
    for (const secret of secrets) expect(logged.filter((line) => line.includes(secret))).toEqual([]);
  });
});
