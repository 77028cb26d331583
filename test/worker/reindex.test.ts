import { createMessageBatch, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/index';
import type { JobStep } from '../../src/ingest/job-step';
import { continueReindex } from '../../src/ingest/reindex';
import { STALL_MINUTES } from '../../src/ingest/sweeper';
import { embedModels } from '../../src/storage/embed-models';
import { startReindex } from '../../src/storage/reindexes';
import { createTransaction } from '../../src/storage/transactions';
import { vectorMetadataKey } from '../../src/storage/vector-metadata';
import { imageVectors, objectVectors, writeEmbedding } from '../../src/storage/vectors';
import { formatTimestamp } from '../../src/time';
import { adminHeaders, basicAuth, call, createApp, fixtureUrl, imageBytes, insert, insertAndWait, runSweeper, search, uploadsearch, waitForTransaction, withVectorIndex, type Credentials, catalogOf, appRecord, appOf } from './helpers';

/**
 * Model upgrades without re-inserting (issue 21): an application is re-embedded into another model of EMBED_MODELS
 * while it keeps answering from the old one, then moves to the new one at once.
 */

const [OLD_MODEL, NEW_MODEL] = [...embedModels(env).keys()] as [string, string];
const NEW_DIMENSIONS = embedModels(env).get(NEW_MODEL)!.dimensions;

const IMAGES = [
  'animals_birds_hen.png',
  'animals_birds_magpie.png',
  'animals_birds_ostrich.png',
  'animals_fish_coraltrout.png',
  'animals_mammals_badger.png',
  'animals_mammals_cats_tiger.png',
  'animals_mammals_dogs_dingo.png',
  'animals_mammals_equines_zebra.png',
  'plants_trees_holm_oak.png',
  'food_fruit_avocado.png',
  'food_fruit_kiwi.png',
  'military_vehicles_f22_raptor.png',
];
const LATE_IMAGES = ['animals_birds_penguin.png', 'animals_mammals_rabbit_little.png', 'food_fruit_Cherry_Stella.png'];

const catalog = (files: string[], brand = 'acme') =>
  files.map((file) => ({ im_name: file, im_url: fixtureUrl(`/images/${file}`), brand }));

type ReindexAnswer = {
  status: string;
  embed_model: string;
  reindex: { from_model: string; to_model: string; state: string; images_total: number; images_done: number; error: string | null };
};

const reindex = async (app: Credentials, model: string): Promise<{ status: number; body: ReindexAnswer }> => {
  const response = await call(`/admin/apps/${app.app_id}/reindex`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ embed_model: model }) });
  return { status: response.status, body: await response.json<ReindexAnswer>() };
};

const progress = async (app: Credentials): Promise<{ status: number; body: ReindexAnswer }> => {
  const response = await call(`/admin/apps/${app.app_id}/reindex`, { headers: adminHeaders });
  return { status: response.status, body: await response.json<ReindexAnswer>() };
};

async function waitForReindex(app: Credentials, state: 'done' | 'failed', timeoutMs = 120_000): Promise<ReindexAnswer> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await progress(app);
    if (body.reindex.state === state) return body;
    if (Date.now() > deadline) throw new Error(`reindex still ${JSON.stringify(body.reindex)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const liveImages = async (app: Credentials) =>
  (
    // The model's id, from its number in the row (migrations/0023).
    await (await catalogOf(app)).prepare('SELECT i.id, i.im_name, m.name AS embed_model, i.object_count FROM images i JOIN embed_models m ON m.id = i.model WHERE i.app_id = ? ORDER BY i.id')
      .bind(app.app_id)
      .all<{ id: number; im_name: string; embed_model: string; object_count: number }>()
  ).results;

const appModel = async (app: Credentials): Promise<string> => {
  const response = await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders });
  return (await response.json<{ embed_model: string }>()).embed_model;
};


/**
 * Runs a reindex's steps around a held delivery: until the application moved and the reindex ended or waits (twice)
 * for something, then lets the delivery go and runs the steps to the end.
 */
async function reindexAround(app: Credentials, first: number, held: { release: () => void; delivered: Promise<unknown> }): Promise<void> {
  let step: JobStep = { next: 'now', step: first };
  for (let waits = 0; step.next !== 'ended' && waits < 2; ) {
    step = await continueReindex(env, await appRecord(app), step.step);
    if (step.next === 'wait' && (await appModel(app)) === NEW_MODEL) waits++;
  }
  expect(await appModel(app)).toBe(NEW_MODEL);
  held.release();
  await held.delivered;
  while (step.next !== 'ended') step = await continueReindex(env, await appRecord(app), step.step);
}

async function newCatalog(name: string, files = IMAGES): Promise<Credentials> {
  const app = await createApp(name, [{ name: 'brand', type: 'string', searchable: true }]);
  const status = await insertAndWait(app, catalog(files));
  expect(status.fail_count, JSON.stringify(status.error_list)).toBe(0);
  return app;
}

describe('reindex', () => {
  it('moves an application to a new model mid-traffic without losing a search or an image', async () => {
    const app = await newCatalog('reindex-live');
    expect(await appModel(app)).toBe(OLD_MODEL);
    // A query image kept before the move: its analysis is of the old model and must be made again after it.
    const before = await uploadsearch(app, { image: await imageBytes('/images/food_fruit_kiwi.png') });
    expect(before.body.status).toBe('OK');

    const started = await reindex(app, NEW_MODEL);
    expect(started.status).toBe(202);
    expect(started.body.reindex).toMatchObject({ from_model: OLD_MODEL, to_model: NEW_MODEL, state: 'embedding', images_total: IMAGES.length });

    // Traffic while it runs: searches of every kind, an insert, a metadata update and a remove.
    const late = await insert(app, catalog(LATE_IMAGES));
    const lateTransaction = (await late.json<{ trans_id: number }>()).trans_id;
    const updated = await insert(app, [{ im_name: IMAGES[0]!, brand: 'renamed' }]);
    const updateTransaction = (await updated.json<{ trans_id: number }>()).trans_id;
    const replaced = await insert(app, [{ im_name: IMAGES[4]!, im_url: fixtureUrl(`/images/${LATE_IMAGES[0]}`), brand: 'acme' }]);
    const replaceTransaction = (await replaced.json<{ trans_id: number }>()).trans_id;
    const removed = await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': IMAGES[1]! }) });
    expect((await removed.json<{ status: string }>()).status).toBe('OK');

    // Searched by name and by their own bytes: the images neither removed nor replaced meanwhile.
    const steady = IMAGES.filter((_, k) => k !== 1 && k !== 4);
    const searched: string[] = [];
    let done = false;
    const traffic = (async () => {
      for (let round = 0; !done || round < 3; round++) {
        const name = steady[round % steady.length]!;
        const similar = await search(app, `im_name=${name}&score=true&limit=5`);
        expect(similar.body.status, JSON.stringify(similar.body)).toBe('OK');
        expect(similar.body.result.length).toBeGreaterThan(0);
        const upload = await uploadsearch(app, { image: await imageBytes(`/images/${name}`), score: 'true' });
        expect(upload.body.status, JSON.stringify(upload.body)).toBe('OK');
        expect(upload.body.result[0]?.im_name).toBe(name);
        const kept = await uploadsearch(app, { im_id: before.body.im_id! });
        expect(kept.body.status, JSON.stringify(kept.body)).toBe('OK');
        searched.push(name);
      }
    })();
    const finished = await waitForReindex(app, 'done').finally(() => (done = true));
    await traffic;
    expect(searched.length).toBeGreaterThanOrEqual(3);
    expect((await waitForTransaction(app, lateTransaction)).fail_count).toBe(0);
    expect((await waitForTransaction(app, updateTransaction)).fail_count).toBe(0);
    expect((await waitForTransaction(app, replaceTransaction)).fail_count).toBe(0);

    // Moved: recorded, every image in the new model's indexes and none left in the old one's.
    expect(finished.embed_model).toBe(NEW_MODEL);
    expect(await appModel(app)).toBe(NEW_MODEL);
    const images = await liveImages(app);
    expect(images.map((image) => image.im_name).sort()).toEqual([...IMAGES.filter((name) => name !== IMAGES[1]), ...LATE_IMAGES].sort());
    expect(finished.reindex).toMatchObject({ state: 'done', images_total: images.length, images_done: images.length, error: null });
    expect(images.every((image) => image.embed_model === NEW_MODEL)).toBe(true);
    const ids = images.map((image) => String(image.id));
    const vectors = await imageVectors(env, NEW_MODEL).getByIds(ids);
    expect(vectors).toHaveLength(images.length);
    expect(vectors.every((vector) => vector.values.length === NEW_DIMENSIONS)).toBe(true);
    expect(await imageVectors(env, OLD_MODEL).getByIds(ids)).toEqual([]);
    const objectIds = images.flatMap((image) => Array.from({ length: image.object_count }, (_, k) => `${image.id}.${k}`));
    expect(await objectVectors(env, NEW_MODEL).getByIds(objectIds)).toHaveLength(objectIds.length);
    expect(await objectVectors(env, OLD_MODEL).getByIds(objectIds)).toEqual([]);
    // Nothing else of the application is left in either model's image index: no vector of a replaced or removed version.
    const everything = async (model: string) => {
      const index = imageVectors(env, model);
      const probe = Array.from({ length: embedModels(env).get(model)!.dimensions }, (_, i) => (i % 7) - 3);
      return (await index.query(probe, { topK: index.maxTopK, namespace: app.app_id })).map((match) => match.id).sort();
    };
    expect(await everything(NEW_MODEL)).toEqual([...ids].sort());
    expect(await everything(OLD_MODEL)).toEqual([]);
    // The metadata update reached the new model's vectors.
    const [first] = await imageVectors(env, NEW_MODEL).getByIds([String(images.find((image) => image.im_name === IMAGES[0])!.id)]);
    expect(first!.metadata).toMatchObject({ [vectorMetadataKey('brand')!]: 'renamed' });

    // Searches after the move: each image finds itself first, queries embedded by the new model.
    for (const name of [...LATE_IMAGES, IMAGES[5]!]) {
      const upload = await uploadsearch(app, { image: await imageBytes(`/images/${name}`), score: 'true' });
      expect(upload.body.result[0]?.im_name, name).toBe(name);
      const similar = await search(app, `im_name=${name}&fq=brand:acme`);
      expect(similar.body.status).toBe('OK');
      expect(similar.body.result.length).toBeGreaterThan(0);
    }
    const kept = await uploadsearch(app, { im_id: before.body.im_id!, score: 'true' });
    expect(kept.body.result[0]).toMatchObject({ im_name: 'food_fruit_kiwi.png' });
    const analysis = await (await catalogOf(app)).prepare('SELECT analysis FROM query_images WHERE id = ?').bind(before.body.im_id).first<{ analysis: string }>();
    expect(JSON.parse(analysis!.analysis).embedModel).toBe(NEW_MODEL);
  });

  it('asked twice at once, runs once and keeps the new model', async () => {
    const app = await newCatalog('reindex-twice', IMAGES.slice(0, 4));
    const answers = await Promise.all([reindex(app, NEW_MODEL), reindex(app, NEW_MODEL)]);
    expect(answers.map(({ status }) => status)).toEqual([202, 202]);
    const finished = await waitForReindex(app, 'done');
    expect(finished).toMatchObject({ embed_model: NEW_MODEL, reindex: { from_model: OLD_MODEL, to_model: NEW_MODEL, images_done: 4 } });
    const ids = (await liveImages(app)).map((image) => String(image.id));
    expect(await imageVectors(env, NEW_MODEL).getByIds(ids)).toHaveLength(4);
    // Asked again once done: it is on that model already.
    expect((await reindex(app, NEW_MODEL)).status).toBe(400);
  });

  it('resumes an interrupted reindex from its progress', async () => {
    const app = await newCatalog('reindex-resume');
    // Begun with its message lost after one step: the step's images are in the new model, the rest are not.
    const started = await startReindex(await catalogOf(app), await appRecord(app), NEW_MODEL);
    expect(await continueReindex(env, await appRecord(app), started!.step)).toEqual({ next: 'now', step: started!.step + 1 });
    const halfway = await progress(app);
    expect(halfway.body.reindex).toMatchObject({ state: 'embedding', images_total: IMAGES.length });
    expect(halfway.body.reindex.images_done).toBeGreaterThan(0);
    expect(halfway.body.reindex.images_done).toBeLessThan(IMAGES.length);
    expect(await appModel(app)).toBe(OLD_MODEL);

    // Not stalled yet: the sweeper leaves it alone.
    await runSweeper();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await progress(app)).body.reindex.images_done).toBe(halfway.body.reindex.images_done);

    const ago = formatTimestamp(new Date(Date.now() - (STALL_MINUTES + 1) * 60_000));
    await (await catalogOf(app)).prepare('UPDATE reindexes SET updated_at = ? WHERE app_id = ?').bind(ago, app.app_id).run();
    await runSweeper();
    const finished = await waitForReindex(app, 'done');
    expect(finished.embed_model).toBe(NEW_MODEL);
    expect(finished.reindex.images_done).toBe(IMAGES.length);
    const upload = await uploadsearch(app, { image: await imageBytes(`/images/${IMAGES[3]}`) });
    expect(upload.body.result[0]?.im_name).toBe(IMAGES[3]);
  });

  it('leaves no vector of the application in any other model, a third one included', async () => {
    const app = await newCatalog('reindex-third-model', [...IMAGES.slice(0, 2), 'opencv-doc_plant.jpg']);
    // A third model, into which an earlier reindex failed half way: one image's vectors are still in its indexes.
    const stray = 'third-model-v1';
    const withThird = {
      ...env,
      EMBED_MODELS: JSON.stringify({ ...JSON.parse(env.EMBED_MODELS), [stray]: { dimensions: 8, images: 'images-third', objects: 'objects-third' } }),
    };
    const image = (await liveImages(app)).find((candidate) => candidate.object_count > 0);
    expect(image, 'a catalog image with a detected object').toBeDefined();
    const values = [...Array(8).keys()];
    const object = { type: 'Vase and Pot', label: 'potted plant', score: 0.9, box: [0, 0, 10, 10] as [number, number, number, number], embedding: values };
    await writeEmbedding(withThird, { id: image!.id, appId: app.app_id, metadata: {} }, { model: stray, vector: values, objects: [object] });
    expect(await imageVectors(withThird, stray).getByIds([String(image!.id)])).toHaveLength(1);
    expect(await objectVectors(withThird, stray).getByIds([`${image!.id}.0`])).toHaveLength(1);

    const started = await startReindex(await catalogOf(app), await appRecord(app), NEW_MODEL);
    for (let step: JobStep = { next: 'now', step: started!.step }; step.next !== 'ended'; ) step = await continueReindex(withThird, await appRecord(app), step.step);
    expect(await appModel(app)).toBe(NEW_MODEL);
    expect(await imageVectors(withThird, stray).getByIds([String(image!.id)])).toEqual([]);
    expect(await objectVectors(withThird, stray).getByIds([`${image!.id}.0`])).toEqual([]);
    expect(await imageVectors(env, OLD_MODEL).getByIds([String(image!.id)])).toEqual([]);
    expect(await imageVectors(env, NEW_MODEL).getByIds([String(image!.id)])).toHaveLength(1);
  });

  it('fails, and leaves the application on its model, when an original is missing', async () => {
    const app = await newCatalog('reindex-missing', IMAGES.slice(0, 3));
    const [victim] = await liveImages(app);
    const { blob_key } = (await (await catalogOf(app)).prepare('SELECT blob_key FROM images WHERE id = ?').bind(victim!.id).first<{ blob_key: string }>())!;
    await env.BLOBS.delete(blob_key);
    expect((await reindex(app, NEW_MODEL)).status).toBe(202);
    const failed = await waitForReindex(app, 'failed');
    expect(failed.reindex.error).toContain('missing');
    expect(failed.embed_model).toBe(OLD_MODEL);
    const upload = await uploadsearch(app, { image: await imageBytes(`/images/${IMAGES[2]}`) });
    expect(upload.body.result[0]?.im_name).toBe(IMAGES[2]);
  });

  it('puts a new application on the model asked for, and refuses what cannot be done', async () => {
    const created = await call('/admin/apps', { method: 'POST', headers: adminHeaders, body: JSON.stringify({ name: 'on-new', embed_model: NEW_MODEL }) });
    expect(created.status).toBe(201);
    const app = await created.json<Credentials>();
    expect(await appModel(app)).toBe(NEW_MODEL);
    await insertAndWait(app, catalog(IMAGES.slice(0, 2)));
    const [image] = await liveImages(app);
    expect(image!.embed_model).toBe(NEW_MODEL);
    expect((await imageVectors(env, NEW_MODEL).getByIds([String(image!.id)]))[0]!.values).toHaveLength(NEW_DIMENSIONS);
    expect(await imageVectors(env, OLD_MODEL).getByIds([String(image!.id)])).toEqual([]);

    const unknown = await call('/admin/apps', { method: 'POST', headers: adminHeaders, body: JSON.stringify({ name: 'x', embed_model: 'nope' }) });
    expect(unknown.status).toBe(400);
    expect((await progress(app)).status).toBe(404);
    expect((await reindex(app, 'nope')).status).toBe(400);
    expect((await reindex(app, NEW_MODEL)).status).toBe(400);
    // Under way (its chain of messages not begun): into the same model it goes on, into another it is refused.
    const started = await startReindex(await catalogOf(app), await appRecord(app), OLD_MODEL);
    expect(started).toMatchObject({ state: 'embedding', toModel: OLD_MODEL });
    expect((await reindex(app, NEW_MODEL)).status).toBe(409);
    expect((await reindex(app, OLD_MODEL)).body.reindex).toMatchObject({ state: 'embedding', to_model: OLD_MODEL });
    // The chain begun by asking again supersedes the one never sent: a step carrying the old number does nothing.
    expect(await continueReindex(env, await appRecord(app), started!.step)).toEqual({ next: 'ended' });
    expect((await waitForReindex(app, 'done')).embed_model).toBe(OLD_MODEL);
  });

  it('an insert embedded by both models that applies after the switch leaves nothing in the old model', async () => {
    const app = await newCatalog('reindex-late-insert', IMAGES.slice(0, 2));
    const started = await startReindex(await catalogOf(app), await appRecord(app), NEW_MODEL);
    // Accepted while the reindex embeds: written in both models, and held before it applies until the application moved.
    const transId = await createTransaction(env, await appOf(app), [
      { index: 0, imName: 'late', imUrl: fixtureUrl(`/images/${LATE_IMAGES[0]}`), metadata: { brand: 'acme' } },
    ]);
    let storing!: () => void;
    let release!: () => void;
    const stored = new Promise<void>((resolve) => (storing = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = new Proxy(env.BLOBS, {
      get: (target, property) => {
        if (property !== 'put') return (Reflect.get(target, property) as unknown as (...args: unknown[]) => unknown).bind(target);
        return async (...args: Parameters<R2Bucket['put']>) => {
          storing();
          await released;
          return target.put(...args);
        };
      },
    });
    const batch = createMessageBatch('image-insert', [{ id: 'late', timestamp: Date.now(), attempts: 1, body: { transId, index: 0, database: (await appOf(app)).database } }]);
    const delivered = worker.queue(batch, { ...env, BLOBS: held });
    await stored;

    await reindexAround(app, started!.step, { release, delivered });

    const late = (await liveImages(app)).find((image) => image.im_name === 'late')!;
    expect(late.embed_model).toBe(NEW_MODEL);
    const objectIds = Array.from({ length: late.object_count }, (_, k) => `${late.id}.${k}`);
    expect(await imageVectors(env, NEW_MODEL).getByIds([String(late.id)])).toHaveLength(1);
    expect(await objectVectors(env, NEW_MODEL).getByIds(objectIds)).toHaveLength(objectIds.length);
    expect(await imageVectors(env, OLD_MODEL).getByIds([String(late.id)])).toEqual([]);
    expect(await objectVectors(env, OLD_MODEL).getByIds(objectIds)).toEqual([]);
  });

  it('a metadata update that read the old model before the switch holds the retire pass back, and leaves nothing there', async () => {
    const app = await newCatalog('reindex-late-update', IMAGES.slice(0, 2));
    const started = await startReindex(await catalogOf(app), await appRecord(app), NEW_MODEL);
    const transId = await createTransaction(env, await appOf(app), [{ index: 0, imName: IMAGES[0]!, imUrl: null, metadata: { brand: 'updated' } }]);
    // The update merges and reads the vectors of both models while the reindex embeds, then waits to write them back.
    let reading!: () => void;
    let release!: () => void;
    const read = new Promise<void>((resolve) => (reading = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = withVectorIndex((stub) => ({
      getByIds: async (ids: string[]) => {
        const records = await stub.getByIds(ids);
        reading();
        await released;
        return records;
      },
    }));
    const batch = createMessageBatch('image-insert', [{ id: 'update', timestamp: Date.now(), attempts: 1, body: { transId, index: 0, database: (await appOf(app)).database } }]);
    const delivered = worker.queue(batch, held);
    await read;

    await reindexAround(app, started!.step, { release, delivered });

    const updated = (await liveImages(app)).find((image) => image.im_name === IMAGES[0])!;
    const objectIds = Array.from({ length: updated.object_count }, (_, k) => `${updated.id}.${k}`);
    expect(await imageVectors(env, OLD_MODEL).getByIds([String(updated.id)])).toEqual([]);
    expect(await objectVectors(env, OLD_MODEL).getByIds(objectIds)).toEqual([]);
    const [vector] = await imageVectors(env, NEW_MODEL).getByIds([String(updated.id)]);
    expect(vector?.metadata?.[vectorMetadataKey('brand')!]).toBe('updated');
  });
});
