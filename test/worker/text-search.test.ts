/**
 * Search by text (`/textsearch`) and an image query steered by a text (`q` on the upload searches), on the tiny CLIP
 * model the setup loads beside the built-in ones (test/support/global-setup.ts): its image vector of a solid colour
 * is the colour's normalized channels, and its text tower maps `red` to the red image's vector, so every ranking
 * here is known by construction.
 */
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { inference } from '../../src/ports/inference';
import { MAX_TEXT_LENGTH } from '../../src/ports/inference/types';
import { MODEL_READS_NO_TEXT } from '../../src/search/text-query';
import { objectVectors } from '../../src/storage/vectors';
import {
  basicAuth,
  call,
  createApp,
  discoversearch,
  fixtureUrl,
  insertAndWait,
  search,
  uploadsearch,
  type Credentials,
  type SearchBody,
  catalogOf,
} from './helpers';

const COLOURS = { red: 'ff0000', green: '00ff00', blue: '0000ff' } as const;
const solid = (hex: string) => fixtureUrl(`/palette/${hex}:100`);
/** A neutral query: nearest blue of the three, far from red (its channels against CLIP's mean and std). */
const GREY = solid('808080');

const textsearch = (app: Credentials, query: string) => search(app, query, '/textsearch');
const names = (body: SearchBody) => body.result.map((item) => item.im_name);

describe('search by text on a model that reads text', () => {
  let app: Credentials;
  beforeAll(async () => {
    app = await createApp('text', [{ name: 'brand', type: 'string', searchable: true }], env.TEXT_EMBED_MODEL);
    const status = await insertAndWait(app, [
      { im_name: 'red', im_url: solid(COLOURS.red), brand: 'acme' },
      { im_name: 'green', im_url: solid(COLOURS.green), brand: 'acme' },
      { im_name: 'blue', im_url: solid(COLOURS.blue), brand: 'other' },
    ]);
    expect(status.success_count).toBe(3);
  });

  it('ranks the image the text names first, at the score of an identical image', async () => {
    const red = await textsearch(app, 'q=red&score=true');
    expect(red.status).toBe(200);
    expect(red.body).toMatchObject({ status: 'OK', method: 'textsearch', error: [], page: 1, limit: 10, total: 3 });
    expect(red.body.result[0]).toMatchObject({ im_name: 'red' });
    expect(red.body.result[0]!.score).toBeGreaterThan(0.999);
    expect((await textsearch(app, 'q=a%20photo%20of%20BLUE')).body.result[0]?.im_name).toBe('blue');
    // An app key may call it, and a form body carries the parameters as the query string does.
    const byAppKey = await call(`/textsearch?q=green&access_key=${app.app_key}`);
    expect(names(await byAppKey.json<SearchBody>())[0]).toBe('green');
    const posted = await call('/textsearch', { method: 'POST', headers: basicAuth(app), body: new URLSearchParams({ q: 'blue', qinfo: 'true' }) });
    const postedBody = await posted.json<SearchBody>();
    expect(postedBody).toMatchObject({ status: 'OK', method: 'textsearch', qinfo: { q: 'blue' } });
    expect(names(postedBody)[0]).toBe('blue');
  });

  it('ranks by the cosine where it is below 0 too, though the score shown is clamped to 0', async () => {
    // Against CLIP's mean and std, red's vector meets blue's at cosine -0.36 and green's at -0.53: both show 0, and
    // blue, the nearer, comes before green (inserted before it, green would come first on equal scores).
    const { body } = await textsearch(app, 'q=red&score=true');
    expect(names(body)).toEqual(['red', 'blue', 'green']);
    expect(body.result.slice(1).map((item) => item.score)).toEqual([0, 0]);
  });

  it('takes the advanced parameters and paging of /search', async () => {
    expect(names((await textsearch(app, 'q=red&fq=brand:other')).body)).toEqual(['blue']);
    expect(names((await textsearch(app, 'q=red&score_min=0.5')).body)).toEqual(['red']);
    const first = (await textsearch(app, 'q=red&limit=2')).body;
    const second = (await textsearch(app, 'q=red&limit=2&page=2')).body;
    expect([first.total, second.total, second.page]).toEqual([3, 3, 2]);
    expect(new Set([...names(first), ...names(second)])).toEqual(new Set(['red', 'green', 'blue']));
    const grouped = await textsearch(app, 'q=red&group_by=brand&fl=brand');
    expect(grouped.body).toMatchObject({ status: 'OK', group_by_key: 'brand' });
  });

  it('refuses a missing, blank or too long q in the envelope', async () => {
    const required = 'q is required: the text to search by.';
    for (const [query, message] of [
      ['limit=5', required],
      ['q=%20%20', required],
      [`q=${'a'.repeat(MAX_TEXT_LENGTH + 1)}`, `q must be at most ${MAX_TEXT_LENGTH} characters.`],
    ]) {
      const { status, body } = await textsearch(app, query!);
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: 'fail', method: 'textsearch', error: [message], page: 1, total: 0, result: [] });
    }
    expect((await textsearch(app, `q=${'a'.repeat(MAX_TEXT_LENGTH)}`)).body.status).toBe('OK');
  });

  it('counts q in characters: an emoji is one, though JavaScript counts it twice', async () => {
    const emoji = (count: number) => `q=${encodeURIComponent('🙂'.repeat(count))}`;
    expect((await textsearch(app, emoji(MAX_TEXT_LENGTH))).body).toMatchObject({ status: 'OK', error: [] });
    expect((await textsearch(app, emoji(MAX_TEXT_LENGTH + 1))).body.error).toEqual([`q must be at most ${MAX_TEXT_LENGTH} characters.`]);
  });

  it('q steers an image query towards the text: the normalized sum of the two vectors', async () => {
    const plain = await uploadsearch(app, { im_url: GREY, score: 'true' });
    const steered = await uploadsearch(app, { im_url: GREY, q: 'red', score: 'true', qinfo: 'true' });
    expect(plain.body.status).toBe('OK');
    expect(names(plain.body)[0]).toBe('blue');
    expect(steered.body).toMatchObject({ status: 'OK', method: 'uploadsearch', qinfo: { q: 'red' } });
    expect(names(steered.body)[0]).toBe('red');
    const score = (body: SearchBody) => body.result.find((item) => item.im_name === 'red')!.score!;
    expect(score(steered.body)).toBeGreaterThan(score(plain.body));
    // The same rule for each object of a discover search (here the whole image, detection off), and by im_id.
    const discovered = await discoversearch(app, { im_id: plain.body.im_id, q: 'red', detection: 'off' });
    expect(discovered.body.objects[0]?.result[0]?.im_name).toBe('red');
  });

  it('matches detected objects of every type, each image once at its best', async () => {
    const objects = await createApp('text-objects', [], env.TEXT_EMBED_MODEL);
    await insertAndWait(objects, [
      { im_name: 'green', im_url: solid(COLOURS.green) },
      { im_name: 'blue', im_url: solid(COLOURS.blue) },
    ]);
    const before = await textsearch(objects, 'q=red&score=true');
    expect(before.body.result.every((item) => item.score! < 0.1)).toBe(true);
    // A red object in the green image, as a detector would have found it.
    const { id } = (await (await catalogOf(objects)).prepare("SELECT id FROM images WHERE app_id = ? AND im_name = 'green'").bind(objects.app_id).first<{ id: number }>())!;
    const red = await inference(env).embedText('red', { embedModel: env.TEXT_EMBED_MODEL });
    await objectVectors(env, env.TEXT_EMBED_MODEL).upsert([{ id: `${id}.0`, namespace: objects.app_id, values: red.vector, metadata: { type: 'Bag' } }]);
    const after = await textsearch(objects, 'q=red&score=true');
    expect(names(after.body)).toEqual(['green', 'blue']);
    expect(after.body.result[0]!.score).toBeGreaterThan(0.999);
  });
});

describe('a model that reads no text', () => {
  let app: Credentials;
  beforeAll(async () => {
    app = await createApp('no-text');
    await insertAndWait(app, [{ im_name: 'red', im_url: solid(COLOURS.red) }]);
  });

  it('fails /textsearch and q with the message, and searches without q as before', async () => {
    const text = await textsearch(app, 'q=red');
    expect(text.status).toBe(200);
    expect(text.body).toMatchObject({ status: 'fail', method: 'textsearch', error: [MODEL_READS_NO_TEXT], total: 0, result: [] });
    const steered = await uploadsearch(app, { im_url: GREY, q: 'red' });
    expect(steered.body).toMatchObject({ status: 'fail', method: 'uploadsearch', error: [MODEL_READS_NO_TEXT] });
    const discovered = await discoversearch(app, { im_url: GREY, q: 'red' });
    expect(discovered.body).toMatchObject({ status: 'fail', method: 'discoversearch', error: [MODEL_READS_NO_TEXT], objects: [] });
    // Refused before anything was kept: no im_id.
    expect(steered.body.im_id).toBeUndefined();
    const plain = await uploadsearch(app, { im_url: GREY });
    expect(plain.body).toMatchObject({ status: 'OK', result: [{ im_name: 'red' }] });
  });
});
