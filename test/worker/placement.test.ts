import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { shapeCatalog } from '@edge-image-search/devtools/shape-catalog';
import worker from '../../src/index';
import { physicalIndex } from '../../src/ports/vector-index';
import { shardOf } from '../../src/ports/vector-index/sharded';
import { adminHeaders, call, createApp, fixtureUrl, insertAndWait, search, uploadsearch, type Credentials, type SearchBody, catalogOf } from './helpers';

/**
 * Placement (issue 45): an application's 16 shards spread over the indexes of each group (the local stack lists two
 * a group), so that one application may outgrow one index; searches merge them as they merge shards of one index.
 */

const SHARDS = Number(env.VECTOR_INDEX_SHARDS);
const SCHEMA = [
  { name: 'brand', type: 'string' as const, searchable: true },
  { name: 'price', type: 'float' as const, searchable: true },
];
const SHAPES = shapeCatalog(4, 11);
const BRANDS = ['acme', 'globex', 'initech'];
const CATALOG = SHAPES.map((image, i) => ({
  im_name: image.name,
  im_url: fixtureUrl(`/shapes/11:4:${image.name}`),
  brand: BRANDS[i % BRANDS.length]!,
  price: String(10 + i),
}));

type Placement = { database: string; indexes: Record<string, string[]> };
type AppAnswer = { placement: Placement };
type PlacementAnswer = { databases: { name: string; applications: number; images: number; bytes: number }[]; indexes: { name: string; model: string | null; vectors: number; namespaces: number }[] };

const DATABASES = env.D1_DATABASES.split(',').map((name) => name.trim());
const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

const placementOf = async (app: Credentials): Promise<Placement> => (await (await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders })).json<AppAnswer>()).placement;
const capacityView = async (): Promise<PlacementAnswer> => (await call('/admin/placement', { headers: adminHeaders })).json<PlacementAnswer>();

/** What a search answers, less what differs between two applications (request ids, timings). */
const answerOf = (body: SearchBody) => {
  const { reqid: _reqid, ...rest } = body as SearchBody & { reqid?: string };
  return rest;
};

describe('placement over two indexes a group', () => {
  let spread: Credentials;
  let single: Credentials;
  beforeAll(async () => {
    [spread, single] = await Promise.all([createApp('spread', SCHEMA), createApp('single', SCHEMA)]);
    // The same catalog with every shard in its groups' first index, as a deployment of one index a group holds it.
    const placement = await placementOf(single);
    const onFirst = Object.fromEntries(Object.keys(placement.indexes).map((group) => [group, Array.from({ length: SHARDS }, () => group)]));
    await env.DB.prepare('UPDATE apps SET placement = ? WHERE id = ?').bind(JSON.stringify(onFirst), single.app_id).run();
    for (const app of [spread, single]) expect((await insertAndWait(app, CATALOG)).fail_count).toBe(0);
  });

  it("places a new application's shards over both indexes of each of its groups, and counts them", async () => {
    const { database, indexes } = await placementOf(spread);
    expect(DATABASES).toContain(database);
    const models = JSON.parse(env.EMBED_MODELS) as Record<string, { images: string[]; objects: string[]; tuned: { images: string[]; objects: string[] } }>;
    const own = models[env.EMBED_MODEL]!;
    const groups = [own.images, own.objects, own.tuned.images, own.tuned.objects, env.COLOR_INDEXES.split(',').map((name) => name.trim())];
    expect(Object.keys(indexes).sort()).toEqual(groups.map((group) => group[0]!).sort());
    for (const group of groups) {
      const shards = indexes[group[0]!]!;
      expect(shards).toHaveLength(SHARDS);
      expect(new Set(shards)).toEqual(new Set(group));
    }
    // Each vector is in the index its shard is placed on, and only there.
    const [imagesGroup] = [own.images];
    const { results } = await (await catalogOf(spread)).prepare('SELECT id FROM images WHERE app_id = ?').bind(spread.app_id).all<{ id: number }>();
    for (const { id } of results) {
      const placed = indexes[imagesGroup[0]!]![shardOf(String(id), SHARDS)]!;
      for (const name of imagesGroup) expect(await physicalIndex(env, name).getByIds([String(id)]), `${id} in ${name}`).toHaveLength(name === placed ? 1 : 0);
    }
    const view = await capacityView();
    for (const group of groups) {
      for (const name of group) {
        const index = view.indexes.find((entry) => entry.name === name)!;
        expect(index.namespaces).toBeGreaterThanOrEqual(indexes[group[0]!]!.filter((shard) => shard === name).length);
        expect(index.vectors).toBe(await physicalIndex(env, name).countVectors());
      }
    }
    expect(view.databases).toEqual(DATABASES.map((name) => expect.objectContaining({ name, applications: expect.any(Number), images: expect.any(Number), bytes: expect.any(Number) })));
    expect(sum(view.databases.map((entry) => entry.images))).toBeGreaterThanOrEqual(2 * CATALOG.length);
  });

  it('answers /search, /uploadsearch and /colorsearch exactly as the same catalog on one index, with fq, facets and depth 1000', async () => {
    const queries = [
      `/search?im_name=${CATALOG[0]!.im_name}&limit=1000&score=true&fl=brand,price&facets=brand&facets_limit=10`,
      `/search?im_name=${CATALOG[5]!.im_name}&limit=1000&score=true&fq=brand:acme&fq=price:10,30&facets=brand`,
      '/colorsearch?color=ff0000&limit=1000&score=true&fl=brand&facets=brand',
      '/colorsearch?color=00ff00:60&color=0000ff:40&limit=1000&score=true&fq=brand:globex',
    ];
    for (const query of queries) {
      const [path, params] = query.split('?') as [string, string];
      const [a, b] = await Promise.all([search(spread, params, path), search(single, params, path)]);
      expect(a.body.status, JSON.stringify(a.body)).toBe('OK');
      expect(a.body.result.length).toBeGreaterThan(0);
      expect(answerOf(a.body), query).toEqual(answerOf(b.body));
    }
    const image = new Blob([await (await fetch(CATALOG[3]!.im_url)).arrayBuffer()], { type: 'image/png' });
    const asked: Record<string, string>[] = [{ limit: '1000', score: 'true', facets: 'brand', fl: 'price' }, { limit: '1000', score: 'true', fq: 'brand:initech' }];
    for (const fields of asked) {
      const [a, b] = await Promise.all([uploadsearch(spread, { image, ...fields }), uploadsearch(single, { image, ...fields })]);
      expect(a.body.status, JSON.stringify(a.body)).toBe('OK');
      const { im_id: _a, reqid: _ra, ...left } = a.body as typeof a.body & { reqid?: string };
      const { im_id: _b, reqid: _rb, ...right } = b.body as typeof b.body & { reqid?: string };
      expect(left).toEqual(right);
    }
  });

  it('refuses an application, and a reindex, when every index of a group is full, naming the setting to add one to', async () => {
    const full = { ...env, VECTOR_INDEX_CAPACITY: '0' };
    const admin = async (path: string, body: object): Promise<{ status: number; message: string }> => {
      const ctx = createExecutionContext();
      const response = await worker.fetch(new Request(`https://search.test${path}`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) }), full, ctx);
      await waitOnExecutionContext(ctx);
      const answer = await response.json<{ message?: string; error?: string[] }>();
      return { status: response.status, message: JSON.stringify(answer) };
    };
    const applications = async () => sum((await capacityView()).databases.map((entry) => entry.applications));
    const before = await applications();
    const refused = await admin('/admin/apps', { name: 'no-room' });
    expect(refused.status).toBe(507);
    expect(refused.message).toMatch(/is full: add an index to EMBED_MODELS \(the model /);
    expect(await applications()).toBe(before);

    const models = Object.keys(JSON.parse(env.EMBED_MODELS) as object);
    const other = models.find((model) => model !== env.EMBED_MODEL)!;
    const reindex = await admin(`/admin/apps/${spread.app_id}/reindex`, { embed_model: other });
    expect(reindex.status).toBe(507);
    expect(reindex.message).toContain('is full');
  });
});

describe('placement over two databases', () => {
  it("creates applications on both databases by free bytes, each one's catalog rows only in its own, and counts them", async () => {
    expect(DATABASES).toEqual(['DB', 'DB_2']);
    // Each new application goes to the database with the most free bytes: once the first one's holds more (a megabyte
    // more, written here), the next goes to the other.
    const databaseOf = (name: string) => (env as unknown as Record<string, D1Database>)[name]!;
    const made: { app: Credentials; database: string }[] = [];
    for (let k = 0; k < 2; k++) {
      const app = await createApp(`databases-${k}`, SCHEMA);
      expect((await insertAndWait(app, CATALOG.slice(0, 6))).fail_count).toBe(0);
      const { database } = await placementOf(app);
      made.push({ app, database });
      const others = await Promise.all(DATABASES.filter((name) => name !== database).map(async (name) => (await databaseOf(name).prepare('SELECT 1').run()).meta.size_after));
      const own = (await databaseOf(database).prepare('SELECT 1').run()).meta.size_after;
      const filler = Math.max(0, ...others) - own + 1_000_000;
      await databaseOf(database).prepare("INSERT INTO sweep_cursors (name, value) VALUES ('test-filler', hex(zeroblob(?))) ON CONFLICT (name) DO UPDATE SET value = value || excluded.value").bind(filler / 2).run();
    }
    expect(new Set(made.map((entry) => entry.database))).toEqual(new Set(DATABASES));

    const tables = ['images', 'insert_transactions', 'retired_versions'];
    for (const { app, database } of made) {
      for (const name of DATABASES) {
        const db = (env as unknown as Record<string, D1Database>)[name]!;
        const counts = await Promise.all(tables.map(async (table) => (await db.prepare(`SELECT count(*) AS n FROM ${table} WHERE app_id = ?`).bind(app.app_id).first<number>('n'))!));
        if (name === database) expect(counts[0], `${app.app_id} in ${name}`).toBe(6);
        else expect(counts, `${app.app_id} in ${name}`).toEqual([0, 0, 0]);
      }
      // Searches and the transaction's status read its own database.
      const { body } = await search(app, `im_name=${CATALOG[0]!.im_name}&limit=10`);
      expect(body.status, JSON.stringify(body)).toBe('OK');
    }

    // Vector ids (image ids) are unique across the databases.
    const ids = await Promise.all(DATABASES.map(async (name) => (await (env as unknown as Record<string, D1Database>)[name]!.prepare('SELECT id FROM images').all<{ id: number }>()).results.map(({ id }) => id)));
    expect(new Set(ids.flat()).size).toBe(ids.flat().length);

    const view = await capacityView();
    for (const name of DATABASES) {
      const db = (env as unknown as Record<string, D1Database>)[name]!;
      const entry = view.databases.find((listed) => listed.name === name)!;
      expect(entry.applications).toBe((await env.DB.prepare('SELECT count(*) AS n FROM apps WHERE database = ?').bind(name).first<number>('n'))!);
      expect(entry.images).toBe((await db.prepare('SELECT count(*) AS n FROM images').first<number>('n'))!);
      expect(entry.bytes).toBeGreaterThan(0);
      expect(entry.applications).toBeGreaterThan(0);
    }
  });
});
