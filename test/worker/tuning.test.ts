/**
 * Tuning an application's search on a label field (issue 44): on a labelled catalog the test builds (flat shapes in
 * colours that say nothing of the shape, devtools/shape-catalog.ts), labelled by shape, the bundled model ranks much
 * by colour; tuned, the held-out images (never fitted) find their shape far more often. The report agrees with the
 * searches a shop would make; the switch is atomic; inserts and removes during a tuning lose nothing; untuning
 * restores the untuned answers exactly; a text-reading model's text queries keep working tuned.
 */
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { shapeCatalog, type ShapeImage } from '@edge-image-search/devtools/shape-catalog';
import type { JobStep } from '../../src/ingest/job-step';
import { STALL_MINUTES } from '../../src/ingest/sweeper';
import { continueTuning } from '../../src/ingest/tuning';
import { embedModels } from '../../src/storage/embed-models';
import { startReindex } from '../../src/storage/reindexes';
import { getTuning, startTuning } from '../../src/storage/tunings';
import { formatTimestamp } from '../../src/time';
import { imageVectors, objectVectors } from '../../src/storage/vectors';
import { isHeldOut } from '../../src/tuning/held-out';
import { adminHeaders, basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, runSweeper, search, waitForTransaction, type Credentials, type SearchBody, catalogOf, appRecord } from './helpers';

const PER_SHAPE = 12;
const SEED = 7;
const SHAPES = shapeCatalog(PER_SHAPE, SEED);
const shapeUrl = (image: ShapeImage, seed = SEED, count = PER_SHAPE) => fixtureUrl(`/shapes/${seed}:${count}:${image.name}`);
const labelled = (images: ShapeImage[], seed = SEED, count = PER_SHAPE) => images.map((image) => ({ im_name: image.name, im_url: shapeUrl(image, seed, count), shape: image.shape }));
const HELD_OUT = SHAPES.filter((image) => isHeldOut(image.name));
const SCHEMA = [
  { name: 'shape', type: 'string' as const, searchable: true },
  { name: 'brand', type: 'string' as const, searchable: true },
  { name: 'note', type: 'text' as const },
];

type TuningAnswer = {
  status: string;
  tuned: boolean;
  tuning: {
    version: number;
    state: 'running' | 'done' | 'failed';
    phase: string | null;
    applied: boolean | null;
    classes: number;
    labelled: number;
    fitted: number;
    held_out: { share: number; queries: number; precision_at_5: { before: number | null; after: number | null } };
    error: string | null;
  };
};

const tune = async (app: Credentials, body: object) => {
  const response = await call(`/admin/apps/${app.app_id}/tune`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json<TuningAnswer & { error_message?: string; message?: string }>() };
};
const tuningOf = async (app: Credentials) => {
  const response = await call(`/admin/apps/${app.app_id}/tune`, { headers: adminHeaders });
  return { status: response.status, body: await response.json<TuningAnswer>() };
};
const untune = async (app: Credentials) => {
  const response = await call(`/admin/apps/${app.app_id}/tune`, { method: 'DELETE', headers: adminHeaders });
  return { status: response.status, body: await response.json<TuningAnswer>() };
};

async function waitForTuning(app: Credentials, until: (answer: TuningAnswer) => boolean, timeoutMs = 150_000): Promise<TuningAnswer> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await tuningOf(app);
    if (until(body)) return body;
    if (Date.now() > deadline) throw new Error(`tuning still ${JSON.stringify(body.tuning)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
const finished = (answer: TuningAnswer) => answer.tuning.state !== 'running';

/** `/search` of an image with `limit=5`, as names and rounded scores. */
const similar = async (app: Credentials, name: string) => {
  const { status, body } = await search(app, `im_name=${encodeURIComponent(name)}&limit=5&score=true`);
  expect(status, JSON.stringify(body)).toBe(200);
  return body.result.map((item) => ({ im_name: item.im_name, score: Number(item.score!.toFixed(4)) }));
};

/** Precision@5 of the held-out images by their shape, through `/search`: what the report must agree with. */
async function heldOutPrecision(app: Credentials): Promise<number> {
  const shapeOf = new Map(SHAPES.map((image) => [image.name, image.shape]));
  let hits = 0;
  for (const query of HELD_OUT) hits += (await similar(app, query.name)).filter((hit) => shapeOf.get(hit.im_name) === query.shape).length;
  return hits / (HELD_OUT.length * 5);
}

const count = async (index: VectorizeIndex | { getByIds: (ids: string[]) => Promise<unknown[]> }, ids: string[]) => (await index.getByIds(ids)).length;
const liveIds = async (app: Credentials) =>
  (await (await catalogOf(app)).prepare('SELECT id FROM images WHERE app_id = ? ORDER BY id').bind(app.app_id).all<{ id: number }>()).results.map(({ id }) => String(id));

const MODEL = env.EMBED_MODEL;

describe('tuning on a label field', () => {
    let app: Credentials;
  let untunedPrecision: number;
  let untunedAnswers: Map<string, { im_name: string; score: number }[]>;

  beforeAll(async () => {
    app = await createApp('tuned-shapes', SCHEMA);
    // Two images with no label: projected too, and searchable tuned.
    const status = await insertAndWait(app, [
      ...labelled(SHAPES).map((image) => ({ ...image, brand: 'acme' })),
      { im_name: 'unlabelled-hen', im_url: fixtureUrl('/images/animals_birds_hen.png') },
      { im_name: 'unlabelled-kiwi', im_url: fixtureUrl('/images/food_fruit_kiwi.png') },
    ]);
    expect(status.fail_count, JSON.stringify(status.error_list)).toBe(0);
    expect(HELD_OUT.length).toBeGreaterThanOrEqual(8);
    untunedPrecision = await heldOutPrecision(app);
    untunedAnswers = new Map();
    for (const query of HELD_OUT) untunedAnswers.set(query.name, await similar(app, query.name));
  });

  it('is refused with a reason: a field not in the schema, too few labels, a reindex or another tuning under way', async () => {
    const missing = await tune(app, { label_field: 'category' });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/label_field: category is not a field of the application's schema \(brand, note, shape\)/);
    const unlabelled = await tune(app, { label_field: 'note' });
    expect(unlabelled.status).toBe(400);
    expect(JSON.stringify(unlabelled.body)).toMatch(/at least 2 values of note with 3 labelled images or more each; 0 have \(0 images labelled\)/);
    const oneBrand = await tune(app, { label_field: 'brand' });
    expect(oneBrand.status).toBe(400);
    expect(JSON.stringify(oneBrand.body)).toMatch(/1 has \(60 images labelled\)/);
    expect((await tune(app, { label_field: 'shape', apply: 'sometimes' })).status).toBe(400);
    expect((await tune(app, { label_field: 'shape', extra: 1 })).status).toBe(400);
    expect((await tuningOf(app)).status).toBe(404);
    expect((await untune(app)).status).toBe(409);

    const reindexing = await createApp('tuning-while-reindexing', SCHEMA);
    const [, other] = [...embedModels(env).keys()];
    expect(await startReindex(await catalogOf(reindexing), await appRecord(reindexing), other!)).not.toBeNull();
    const refused = await tune(reindexing, { label_field: 'shape' });
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toMatch(/A reindex into .* is under way/);
  });

  it('lifts held-out precision@5, and reports what a recomputation through /search finds', async () => {
    const started = await tune(app, { label_field: 'shape' });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body.tuning).toMatchObject({ version: 1, state: 'running', classes: 5, labelled: 60 });
    // While it runs, another tuning and a reindex are refused.
    expect((await tune(app, { label_field: 'shape' })).status).toBe(409);
    const [, other] = [...embedModels(env).keys()];
    const reindex = await call(`/admin/apps/${app.app_id}/reindex`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ embed_model: other }) });
    expect(reindex.status).toBe(409);

    const done = await waitForTuning(app, finished);
    expect(done.tuning, JSON.stringify(done.tuning)).toMatchObject({ state: 'done', applied: true, error: null });
    expect(done.tuned).toBe(true);
    const { before, after } = done.tuning.held_out.precision_at_5;
    expect(done.tuning.held_out.queries).toBe(HELD_OUT.length);
    expect(done.tuning.fitted).toBe(60 - HELD_OUT.length);
    // The report's "before" is what /search answered untuned; its "after" what it answers now.
    expect(before).toBeCloseTo(untunedPrecision, 6);
    expect(after).toBeCloseTo(await heldOutPrecision(app), 6);
    expect(after! - before!, `before ${before}, after ${after}`).toBeGreaterThan(0.15);
    // The images without a label are in the tuned space too.
    const ids = await liveIds(app);
    expect(await count(imageVectors(env, MODEL, true), ids)).toBe(ids.length);
    expect((await similar(app, 'unlabelled-hen')).length).toBe(5);
    const appAnswer = await (await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders })).json<{ tuning: number | null }>();
    expect(appAnswer.tuning).toBe(1);
  });

  it('untunes at once to the exact untuned answers, then deletes the tuned vectors', async () => {
    const ids = await liveIds(app);
    const answered = await untune(app);
    expect(answered.status).toBe(200);
    expect(answered.body.tuned).toBe(false);
    expect(answered.body.tuning.phase).toBe('retiring');
    for (const query of HELD_OUT) expect(await similar(app, query.name)).toEqual(untunedAnswers.get(query.name));
    const retired = await waitForTuning(app, finished);
    expect(retired.tuning).toMatchObject({ state: 'done', applied: false });
    expect(await count(imageVectors(env, MODEL, true), ids)).toBe(0);
    const objectIds = ids.flatMap((id) => [`${id}.0`, `${id}.1`]);
    expect(await count(objectVectors(env, MODEL, true), objectIds)).toBe(0);
  });
});

describe('inserts and removes during a tuning', () => {
  it('lose nothing: every image inserted is in the tuned space, every image removed is gone from it', async () => {
    const app = await createApp('tuned-while-inserting', SCHEMA);
    const images = shapeCatalog(6, 5);
    expect((await insertAndWait(app, [...labelled(images, 5, 6), { im_name: 'unlabelled-kiwi', im_url: fixtureUrl('/images/food_fruit_kiwi.png') }])).fail_count).toBe(0);
    const removedId = (await liveIds(app)).at(-1)!;
    expect((await tune(app, { label_field: 'shape', apply: 'always' })).status).toBe(202);
    const late = shapeCatalog(2, 99).filter((image) => image.shape === 'triangle');
    const inserted = await insert(app, labelled(late, 99, 2).map((image) => ({ ...image, im_name: `late-${image.im_name}` })));
    const removed = await call('/remove', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ 'im_name[0]': 'unlabelled-kiwi', 'im_name[1]': images[0]!.name }) });
    expect(removed.status).toBe(200);
    // Both were accepted while the tuning was being made.
    expect((await tuningOf(app)).body.tuning.state).toBe('running');
    const { trans_id: transId } = await inserted.json<{ trans_id: number }>();
    expect((await waitForTransaction(app, transId)).success_count).toBe(late.length);
    expect((await waitForTuning(app, finished)).tuning).toMatchObject({ state: 'done', applied: true });

    const ids = await liveIds(app);
    expect(ids).toHaveLength(images.length - 1 + late.length);
    expect(await count(imageVectors(env, MODEL, true), ids)).toBe(ids.length);
    expect(await count(imageVectors(env, MODEL, true), [removedId])).toBe(0);
    // A late image is ranked in the tuned space as those fitted are: among triangles.
    const lateHits = await similar(app, `late-${late[0]!.name}`);
    expect(lateHits.filter((hit) => /^(late-)?triangle-/.test(hit.im_name)).length, JSON.stringify(lateHits)).toBeGreaterThanOrEqual(4);
    // The removed image is gone from the collection (the API answers its failures in the envelope).
    expect((await search(app, `im_name=${images[0]!.name}`)).body.status).toBe('fail');
  });
});

describe('the switch is atomic for searches', () => {
  it('every answer while a tuning runs is the untuned one or the tuned one, never a mix', async () => {
    const app = await createApp('tuned-atomic', SCHEMA);
    const images = shapeCatalog(6, 3);
    expect((await insertAndWait(app, labelled(images, 3, 6))).fail_count).toBe(0);
    const query = images.find((image) => image.shape === 'ring')!.name;
    const untuned = JSON.stringify(await similar(app, query));
    expect((await tune(app, { label_field: 'shape', apply: 'always' })).status).toBe(202);
    const seen = new Set<string>();
    for (let answer = await tuningOf(app); answer.body.tuning.state === 'running'; answer = await tuningOf(app)) seen.add(JSON.stringify(await similar(app, query)));
    const tuned = JSON.stringify(await similar(app, query));
    expect(tuned).not.toBe(untuned);
    expect(seen.size).toBeGreaterThan(0);
    for (const answer of seen) expect([untuned, tuned]).toContain(answer);
    expect((await tuningOf(app)).body.tuning).toMatchObject({ state: 'done', applied: true });
  });
});

describe('a text-reading model, tuned', () => {
  it('still answers text queries with the images the text names', async () => {
    const app = await createApp('tuned-text', [{ name: 'family', type: 'string', searchable: true }], env.TEXT_EMBED_MODEL);
    const shades = { red: ['ff0000', 'e01818', 'c83030', 'f04040'], green: ['00ff00', '18e018', '30c830', '40f040'], blue: ['0000ff', '1818e0', '3030c8', '4040f0'] };
    const images = Object.entries(shades).flatMap(([family, hexes]) => hexes.map((hex) => ({ im_name: `${family}-${hex}`, im_url: fixtureUrl(`/palette/${hex}:100`), family })));
    expect((await insertAndWait(app, images)).fail_count).toBe(0);
    expect((await tune(app, { label_field: 'family', apply: 'always' })).status).toBe(202);
    expect((await waitForTuning(app, finished)).tuning).toMatchObject({ state: 'done', applied: true });
    for (const family of Object.keys(shades)) {
      const { status, body } = await search(app, `q=${family}&limit=4`, '/textsearch');
      expect(status).toBe(200);
      expect((body as SearchBody).result.map((hit) => hit.im_name.split('-')[0])).toEqual([family, family, family, family]);
    }
  });
});

describe('the decision and the job', () => {
  /** Runs a tuning's steps by hand (no queue message) until `stop` says so or it ends. */
  async function runSteps(app: Credentials, first: number, stop: () => Promise<boolean> = async () => false): Promise<JobStep> {
    let step: JobStep = { next: 'now', step: first };
    while (step.next !== 'ended' && !(await stop())) {
      if (step.next === 'wait') await new Promise((resolve) => setTimeout(resolve, 200));
      step = await continueTuning(env, await appRecord(app), step.step);
    }
    return step;
  }
  const tuningRow = async (app: Credentials) => (await getTuning(await catalogOf(app), app.app_id))!;

  it('a tuning whose held-out precision would fall is reported, and the application stays untuned unless asked', async () => {
    const app = await createApp('tuned-worse', SCHEMA);
    const images = shapeCatalog(6, 13);
    expect((await insertAndWait(app, labelled(images, 13, 6))).fail_count).toBe(0);
    const untuned = await similar(app, images[0]!.name);
    const classes = [...new Set(images.map((image) => image.shape))];
    const started = (await startTuning(env, await appRecord(app), { labelField: 'shape', apply: 'better', classes, labelled: images.length }, 0))!;
    const lastId = Number((await liveIds(app)).at(-1));
    // Up to the decision: the evaluation has searched every held-out image.
    const step = await runSteps(app, started.step, async () => {
      const row = await tuningRow(app);
      return row.state === 'evaluating' && row.cursor >= lastId;
    });
    expect(step.next).toBe('now');
    const measured = await tuningRow(app);
    expect(measured.queries).toBeGreaterThan(0);
    // The counts as a tuning that loses would leave them: fewer same-shape results tuned than untuned.
    await (await catalogOf(app)).prepare('UPDATE tunings SET hits_before = hits_after + 1 WHERE app_id = ?').bind(app.app_id).run();
    expect(await runSteps(app, (step as { step: number }).step)).toEqual({ next: 'ended' });
    const { body } = await tuningOf(app);
    expect(body.tuned).toBe(false);
    expect(body.tuning).toMatchObject({ state: 'done', applied: false, error: null });
    expect(body.tuning.held_out.precision_at_5.after!).toBeLessThan(body.tuning.held_out.precision_at_5.before!);
    // Its vectors are gone, and the answers are the untuned ones.
    expect(await count(imageVectors(env, MODEL, true), await liveIds(app))).toBe(0);
    expect(await similar(app, images[0]!.name)).toEqual(untuned);
  });

  it('a tuning that cannot be fitted (one image a label to fit, the others held out) fails at once with the reason', async () => {
    const app = await createApp('tuned-too-few', SCHEMA);
    const catalog = shapeCatalog(20, 11);
    // Per shape: two held-out images and one to fit, all labelled: 3 labelled, as the minimum asks.
    const chosen = ['circle', 'square'].flatMap((shape) => {
      const own = catalog.filter((image) => image.shape === shape);
      return [...own.filter((image) => isHeldOut(image.name)).slice(0, 2), own.find((image) => !isHeldOut(image.name))!];
    });
    expect(chosen).toHaveLength(6);
    expect((await insertAndWait(app, labelled(chosen, 11, 20))).fail_count).toBe(0);
    expect((await tune(app, { label_field: 'shape' })).status).toBe(202);
    const failed = await waitForTuning(app, finished, 60_000);
    expect(failed.tuned).toBe(false);
    expect(failed.tuning).toMatchObject({ state: 'failed', applied: false, fitted: 2 });
    expect(failed.tuning.error).toMatch(/Each label of shape has at most one image to fit \(one labelled image in 5 is held out, never fitted\): label more images\./);
  });

  it('a tuning whose message was lost is resumed by the sweeper and finishes', async () => {
    const app = await createApp('tuned-lost', SCHEMA);
    const images = shapeCatalog(4, 17);
    expect((await insertAndWait(app, labelled(images, 17, 4))).fail_count).toBe(0);
    const classes = [...new Set(images.map((image) => image.shape))];
    // Begun without its first message, and not moved for longer than a stall.
    expect(await startTuning(env, await appRecord(app), { labelField: 'shape', apply: 'always', classes, labelled: images.length }, 0)).not.toBeNull();
    const ago = formatTimestamp(new Date(Date.now() - (STALL_MINUTES + 1) * 60_000));
    await (await catalogOf(app)).prepare('UPDATE tunings SET updated_at = ? WHERE app_id = ?').bind(ago, app.app_id).run();
    await runSweeper();
    expect((await waitForTuning(app, finished)).tuning).toMatchObject({ state: 'done', applied: true });
    expect((await tuningRow(app)).resumes).toBe(0);
  });
});
