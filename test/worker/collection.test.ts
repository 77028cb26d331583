import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { imageVectors } from '../../src/storage/vectors';
import { adminHeaders, basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, retiredLeft, search, setLimits, waitForTransaction, type Credentials, catalogOf } from './helpers';

/** The insert answer's HTTP status and envelope status: failures too are HTTP 200, with `status: 'fail'`. */
const outcome = async (response: Response): Promise<{ http: number; status: string }> => ({
  http: response.status,
  status: (await response.json<{ status: string }>()).status,
});
const ACCEPTED = { http: 200, status: 'OK' };

describe('metadata by the schema', () => {
  it('is stored by type, returned as strings in value_map, text never, unknown fields ignored', async () => {
    const app = await createApp('shop', [
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float' },
      { name: 'stock', type: 'int' },
      { name: 'description', type: 'text', searchable: true },
    ]);
    await insertAndWait(app, [
      { im_name: 'a', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'Acme', price: '9.50', stock: '+7', description: 'a hen', color: 'red' },
      { im_name: 'b', im_url: fixtureUrl('/images/animals_birds_rooster.png'), brand: 'Other' },
    ]);
    const all = await search(app, 'im_name=b&get_all_fl=true');
    expect(all.body.result).toEqual([{ im_name: 'a', value_map: { brand: 'Acme', price: '9.5', stock: '7' } }]);
    const some = await search(app, 'im_name=b&fl=price&fl=description&fl=color&fl=nope');
    expect(some.body.result).toEqual([{ im_name: 'a', value_map: { price: '9.5' } }]);
    // A field selected that the image lacks leaves value_map empty, never absent: `b` has no price nor stock.
    const lacking = await search(app, 'im_name=a&fl=price,stock');
    expect(lacking.body.result).toEqual([{ im_name: 'b', value_map: {} }]);
    // Fields outside the schema and text fields select nothing: no value_map (spec 2.5).
    const none = await search(app, 'im_name=b&fl=description&fl=nope');
    expect(none.body.result).toEqual([{ im_name: 'a' }]);
    const stored = await (await catalogOf(app)).prepare('SELECT metadata FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, 'a').first<{ metadata: string }>();
    expect(JSON.parse(stored!.metadata)).toEqual({ brand: 'Acme', price: 9.5, stock: 7, description: 'a hen' });
  });

  it('re-insert replaces the image, its vector and every metadata field, as a new version that retires the old one', async () => {
    const app = await createApp('shop', [
      { name: 'brand', type: 'string' },
      { name: 'size', type: 'string' },
    ]);
    await insertAndWait(app, [
      { im_name: 'item', im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'Acme', size: 'L' },
      { im_name: 'hen-twin', im_url: fixtureUrl('/near-copy/animals_birds_hen.png') },
      { im_name: 'tiger-twin', im_url: fixtureUrl('/near-copy/animals_mammals_cats_tiger.png') },
    ]);
    const row = async () =>
      (await catalogOf(app)).prepare('SELECT id, metadata, format, blob_key FROM images WHERE app_id = ? AND im_name = ?')
        .bind(app.app_id, 'item')
        .first<{ id: number; metadata: string; format: string; blob_key: string }>();
    const before = await row();
    const [vectorBefore] = await imageVectors(env, env.EMBED_MODEL).getByIds([String(before!.id)]);
    expect((await search(app, 'im_name=item&limit=1')).body.result[0]?.im_name).toBe('hen-twin');

    await insertAndWait(app, [{ im_name: 'item', im_url: fixtureUrl('/images/animals_mammals_cats_tiger.png'), brand: 'Zed' }]);

    const after = await row();
    // A new version under a new id; the old one's vector and bytes are gone.
    expect(await retiredLeft(app)).toBe(0);
    expect(after!.id).toBeGreaterThan(before!.id);
    expect(JSON.parse(after!.metadata)).toEqual({ brand: 'Zed' });
    const [vectorAfter] = await imageVectors(env, env.EMBED_MODEL).getByIds([String(after!.id)]);
    expect(vectorAfter?.values).not.toEqual(vectorBefore?.values);
    expect(await imageVectors(env, env.EMBED_MODEL).getByIds([String(before!.id)])).toEqual([]);
    expect(await env.BLOBS.head(before!.blob_key)).toBeNull();
    expect((await search(app, 'im_name=item&limit=1&get_all_fl=true')).body.result[0]).toEqual({ im_name: 'tiger-twin', value_map: {} });
    const blob = await env.BLOBS.get(after!.blob_key);
    expect(blob?.httpMetadata?.contentType).toBe('image/png');
    const tiger = await (await fetch(fixtureUrl('/images/animals_mammals_cats_tiger.png'))).arrayBuffer();
    expect((await blob!.arrayBuffer()).byteLength).toBe(tiger.byteLength);
    const count = await (await catalogOf(app)).prepare('SELECT count(*) AS n FROM images WHERE app_id = ?').bind(app.app_id).first<{ n: number }>();
    expect(count?.n).toBe(3);
  });
});

describe('operator limits (admin API) and the general errors', () => {
  it('refuses inserts past the collection size limit, counting re-inserts as nothing new', async () => {
    const app = await createApp();
    expect((await setLimits(app, { image_limit: 2 })).status).toBe(200);
    await insertAndWait(app, [
      { im_name: 'a', im_url: fixtureUrl('/images/animals_birds_hen.png') },
      { im_name: 'b', im_url: fixtureUrl('/images/animals_birds_rooster.png') },
    ]);
    const over = await insert(app, [{ im_name: 'c', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    expect(over.status).toBe(200);
    expect(await over.json()).toEqual({
      status: 'fail',
      method: 'insert',
      error: ['Exceeds image collection size limit.'],
      total: 0,
      result: [],
    });
    expect(await outcome(await insert(app, [{ im_name: 'a', im_url: fixtureUrl('/images/animals_birds_hen.png') }]))).toEqual(ACCEPTED);
    expect((await setLimits(app, { image_limit: null })).status).toBe(200);
    expect(await outcome(await insert(app, [{ im_name: 'c', im_url: fixtureUrl('/images/animals_birds_hen.png') }]))).toEqual(ACCEPTED);
  });

  it('answers busy while too many images wait to be processed', async () => {
    const app = await createApp();
    await setLimits(app, { pending_limit: 2 });
    const slow = (name: string) => ({ im_name: name, im_url: fixtureUrl('/slow/animals_birds_hen.png') });
    const accepted = await insert(app, [slow('a'), slow('b')]);
    expect(accepted.status).toBe(200);
    const { status, trans_id } = await accepted.json<{ status: string; trans_id: number }>();
    expect(status).toBe('OK');
    const busy = await insert(app, [slow('c')]);
    expect(busy.status).toBe(200);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect(await busy.json()).toEqual({ status: 'fail', method: 'insert', error: ['System busy, please try again later.'], total: 0, result: [] });
    await waitForTransaction(app, trans_id);
    const again = await insert(app, [slow('c')]);
    expect(again.headers.get('retry-after')).toBeNull();
    expect(await outcome(again)).toEqual(ACCEPTED);
  });

  /** 12 single-image inserts at once, each of its own name: the answers' envelopes and their transactions. */
  async function parallelInserts(app: Credentials, url: string) {
    const responses = await Promise.all(Array.from({ length: 12 }, (_, k) => insert(app, [{ im_name: `p${k}`, im_url: url }])));
    const bodies = await Promise.all(responses.map((response) => response.json<{ status: string; error: unknown[]; trans_id?: number }>()));
    return { accepted: bodies.flatMap((body) => (body.status === 'OK' ? [body.trans_id!] : [])), refused: bodies.filter((body) => body.status !== 'OK') };
  }

  const countWhere = async (sql: string, appId: string) => (await (await catalogOf(appId)).prepare(sql).bind(appId).first<{ n: number }>())!.n;

  it('holds the collection size limit under parallel inserts', async () => {
    const app = await createApp();
    await setLimits(app, { image_limit: 5 });
    const { accepted, refused } = await parallelInserts(app, fixtureUrl('/images/animals_birds_hen.png'));
    expect(accepted).toHaveLength(5);
    expect(refused).toEqual(Array.from({ length: 7 }, () => ({ status: 'fail', method: 'insert', error: ['Exceeds image collection size limit.'], total: 0, result: [] })));
    await Promise.all(accepted.map((transId) => waitForTransaction(app, transId)));
    expect(await countWhere('SELECT count(*) AS n FROM images WHERE app_id = ?', app.app_id)).toBe(5);
  });

  it('holds the pending limit under parallel inserts', async () => {
    const app = await createApp();
    await setLimits(app, { pending_limit: 3 });
    // Slow downloads keep the accepted images waiting while the other calls are decided.
    const { accepted, refused } = await parallelInserts(app, fixtureUrl('/slow/animals_birds_hen.png'));
    expect(accepted).toHaveLength(3);
    expect(refused).toEqual(Array.from({ length: 9 }, () => ({ status: 'fail', method: 'insert', error: ['System busy, please try again later.'], total: 0, result: [] })));
    const pending = `SELECT count(*) AS n FROM insert_items i JOIN insert_transactions t ON t.id = i.trans_id WHERE t.app_id = ? AND i.state = 'pending'`;
    expect(await countWhere(pending, app.app_id)).toBeLessThanOrEqual(3);
    await Promise.all(accepted.map((transId) => waitForTransaction(app, transId)));
  });

  it('validates limits in the admin API', async () => {
    const app = await createApp();
    expect((await setLimits(app, { image_limit: -1 })).status).toBe(400);
    const response = await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders });
    expect(await response.json()).toMatchObject({ image_limit: null, pending_limit: null });
  });
});

describe('bulk: 250 images in three calls', () => {
  it('adds up every count and loses nothing', async () => {
    const app = await createApp();
    const manifest = await (await fetch(fixtureUrl('/images/manifest.json'))).json<{ file: string; width: number; height: number }[]>();
    const files = manifest.map((entry) => entry.file);
    const tooSmall = new Set(manifest.filter((entry) => Math.max(entry.width, entry.height) < 100).map((entry) => entry.file));
    const images = Array.from({ length: 250 }, (_, i) => ({ im_name: `bulk-${i}`, file: files[i % files.length]! }));
    const calls = [images.slice(0, 100), images.slice(100, 200), images.slice(200)];

    const transIds: number[] = [];
    for (const batch of calls) {
      const response = await insert(app, batch.map(({ im_name, file }) => ({ im_name, im_url: fixtureUrl(`/images/${file}`) })));
      const body = await response.json<{ status: string; total: number; trans_id: number }>();
      expect(body).toMatchObject({ status: 'OK', total: batch.length });
      transIds.push(body.trans_id);
    }
    const statuses = await Promise.all(transIds.map((id) => waitForTransaction(app, id, 240_000)));

    const expectedFailures = images.filter((image) => tooSmall.has(image.file)).map((image) => image.im_name);
    statuses.forEach((status, i) => {
      expect(status.total).toBe(calls[i]!.length);
      expect(status.success_count + status.fail_count).toBe(status.total);
    });
    expect(statuses.flatMap((status) => status.error_list.map((entry) => entry.im_name)).sort()).toEqual(expectedFailures.sort());
    expect(statuses.flatMap((status) => status.error_list.map((entry) => entry.error_code))).toEqual(expectedFailures.map(() => 203));

    const succeeded = statuses.reduce((sum, status) => sum + status.success_count, 0);
    expect(succeeded).toBe(250 - expectedFailures.length);
    const { results } = await (await catalogOf(app)).prepare('SELECT id FROM images WHERE app_id = ?').bind(app.app_id).all<{ id: number }>();
    expect(results).toHaveLength(succeeded);
    const vectors = await imageVectors(env, env.EMBED_MODEL).getByIds(results.map((row) => String(row.id)));
    expect(vectors).toHaveLength(succeeded);
    expect(vectors.every((vector) => vector.namespace === app.app_id)).toBe(true);
    const listed = await env.BLOBS.list({ prefix: `${app.app_id}/images/`, limit: 1000 });
    expect(listed.objects).toHaveLength(succeeded);
  }, 300_000);
});
