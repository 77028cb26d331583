/**
 * Each answer's round trips to D1 and to the vector index, from its Server-Timing (README, Deploy): the searches read
 * through a D1 session that may read a replica, so their reads count as `d1-replica` and they make no round trip to
 * the primary unless they write; the data and admin endpoints read and write the primary (an `/insert/status` right
 * after its `/insert` sees it).
 */
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  basicAuth,
  call,
  createApp,
  fixtureUrl,
  imageBytes,
  insert,
  insertAndWait,
  searchForm,
  waitForTransaction,
  type Credentials,
  type TransactionStatus,
  type UploadBody,
} from './helpers';

const KINDS = ['d1-primary', 'd1-replica', 'vector-index'] as const;
type Counts = { primary: number; replica: number; vectorIndex: number };

/** An answer's round-trip counts; each entry is there once, exactly `name;dur=<ms>;desc="<count>"`. */
function roundTrips(response: Response): Counts {
  const entries = (response.headers.get('server-timing') ?? '').split(',').map((entry) => entry.trim());
  const [primary, replica, vectorIndex] = KINDS.map((kind) => {
    const found = entries.filter((entry) => entry.startsWith(`${kind};`));
    expect(found, `${kind} in ${entries.join(', ')}`).toHaveLength(1);
    const match = /^[\w-]+;dur=\d+\.\d;desc="(\d+)"$/.exec(found[0]!);
    expect(match, found[0]).not.toBeNull();
    return Number(match![1]);
  });
  return { primary: primary!, replica: replica!, vectorIndex: vectorIndex! };
}

/** The counts of a call, its body read (so that nothing it started is left). */
async function countsOf(response: Promise<Response>): Promise<Counts & { body: unknown }> {
  const answered = await response;
  return { ...roundTrips(answered), body: answered.headers.get('content-type')?.includes('json') ? await answered.json() : await answered.arrayBuffer() };
}

const CATALOG = ['animals_birds_hen.png', 'animals_mammals_cats_tiger.png', 'skimage_coffee.jpg'];

describe('round trips in Server-Timing', () => {
  let app: Credentials;
  let headers: Record<string, string>;
  beforeAll(async () => {
    app = await createApp('trips', [{ name: 'brand', type: 'string', searchable: true }]);
    headers = basicAuth(app);
    await insertAndWait(app, CATALOG.map((file, k) => ({ im_name: `i${k}`, im_url: fixtureUrl(`/images/${file}`), brand: 'acme' })));
  });

  it('are on every answer, zero counts included: a path no endpoint has makes none', async () => {
    expect(await countsOf(call('/nothing'))).toMatchObject({ primary: 0, replica: 0, vectorIndex: 0 });
    expect(await countsOf(call('/openapi.json'))).toMatchObject({ primary: 0, replica: 0, vectorIndex: 0 });
    // Failures too: refused credentials, and a search's failure envelope.
    expect((await call('/search?im_name=i0', { headers: basicAuth({ access_key: 'nobody', secret_key: 'x' }) })).headers.get('server-timing')).toContain('d1-primary;');
    const unknown = await countsOf(call('/search?im_name=nope', { headers }));
    expect(unknown).toMatchObject({ primary: 0, vectorIndex: 0, body: { status: 'fail' } });
    expect(unknown.replica).toBeGreaterThan(0);
  });

  it('/search and /recommendation read near: the image, its vector, the nearest vectors and their rows', async () => {
    for (const endpoint of ['/search', '/recommendation']) {
      await call(`${endpoint}?im_name=i0`, { headers });
      const steady = await countsOf(call(`${endpoint}?im_name=i0`, { headers }));
      expect(steady).toMatchObject({ primary: 0, vectorIndex: 2, body: { status: 'OK' } });
      // At least the query image's row and the results' rows.
      expect(steady.replica).toBeGreaterThanOrEqual(2);
      // value_map of the page is read for the shown images alone: one round trip more.
      const withFields = await countsOf(call(`${endpoint}?im_name=i0&fl=brand`, { headers }));
      expect(withFields).toMatchObject({ primary: 0, replica: steady.replica + 1, vectorIndex: 2 });
    }
  });

  it('/colorsearch and /image read near', async () => {
    await call('/colorsearch?color=ff0000', { headers });
    const color = await countsOf(call('/colorsearch?color=ff0000', { headers }));
    expect(color).toMatchObject({ primary: 0, vectorIndex: 1, body: { status: 'OK' } });
    expect(color.replica).toBeGreaterThanOrEqual(2);
    const image = await countsOf(call('/image?im_name=i0', { headers }));
    expect(image).toMatchObject({ primary: 0, vectorIndex: 0 });
    expect(image.replica).toBeGreaterThanOrEqual(1);
  });

  it('/uploadsearch writes its new query image to the primary; by im_id it reads near only', async () => {
    const upload = await countsOf(call('/uploadsearch', { method: 'POST', headers, body: searchForm({ image: await imageBytes('/images/skimage_coffee.jpg') }) }));
    // The write of a session goes to the primary: the query image kept for its im_id.
    expect(upload).toMatchObject({ primary: 1, vectorIndex: 1, body: { status: 'OK' } });
    const { im_id } = upload.body as UploadBody;
    const byId = await countsOf(call('/uploadsearch', { method: 'POST', headers, body: searchForm({ im_id }) }));
    expect(byId).toMatchObject({ primary: 0, vectorIndex: 1, body: { status: 'OK', im_id } });
    // The collection check, the kept image and the results' rows.
    expect(byId.replica).toBeGreaterThanOrEqual(3);
    // An im_id a replica does not know is looked up on the primary, which has every kept image.
    const unknown = await countsOf(call('/uploadsearch', { method: 'POST', headers, body: searchForm({ im_id: 'f'.repeat(32) }) }));
    expect(unknown).toMatchObject({ primary: 1, vectorIndex: 0, body: { status: 'fail', error: ['Image not found with im_id.'] } });
  });

  it('/textsearch reads near', async () => {
    const text = await createApp('trips-text', [], env.TEXT_EMBED_MODEL);
    await insertAndWait(text, [{ im_name: 'red', im_url: fixtureUrl('/palette/ff0000:100') }]);
    await call('/textsearch?q=red', { headers: basicAuth(text) });
    const found = await countsOf(call('/textsearch?q=red', { headers: basicAuth(text) }));
    // Whole images and objects: one query each.
    expect(found).toMatchObject({ primary: 0, vectorIndex: 2, body: { status: 'OK', result: [{ im_name: 'red' }] } });
    expect(found.replica).toBeGreaterThanOrEqual(2);
  });

  it('the data and admin endpoints read and write the primary, and an /insert/status sees its /insert at once', async () => {
    // Steady state: the isolate knows the application already.
    await call('/insert/status/1', { headers });
    const inserted = await countsOf(insert(app, [{ im_name: 'x', im_url: fixtureUrl('/images/skimage_coffee.jpg') }]));
    expect(inserted).toMatchObject({ replica: 0, vectorIndex: 0, body: { status: 'OK' } });
    // Its transaction and items, at most two round trips in steady state (the target).
    expect(inserted.primary).toBeGreaterThanOrEqual(1);
    expect(inserted.primary).toBeLessThanOrEqual(2);
    const { trans_id } = inserted.body as { trans_id: number };
    const status = await countsOf(call(`/insert/status/${trans_id}`, { headers }));
    expect(status).toMatchObject({ replica: 0, vectorIndex: 0, body: { status: 'OK', result: [{ total: 1 }] } });
    expect(status.primary).toBeGreaterThanOrEqual(1);
    expect((status.body as { result: TransactionStatus[] }).result).toHaveLength(1);
    await waitForTransaction(app, trans_id);

    const removed = await countsOf(call('/remove', { method: 'POST', headers, body: new URLSearchParams({ 'im_name[0]': 'x' }) }));
    expect(removed).toMatchObject({ replica: 0, body: { status: 'OK' } });
    expect(removed.primary).toBeGreaterThanOrEqual(1);
    const admin = await countsOf(call(`/admin/apps/${app.app_id}`, { headers: adminHeaders }));
    expect(admin).toMatchObject({ replica: 0, vectorIndex: 0 });
    expect(admin.primary).toBeGreaterThanOrEqual(1);
  });
});
