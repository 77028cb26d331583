import { beforeAll, describe, expect, it } from 'vitest';
import { call, createApp, fixtureUrl, insert, insertAndWait, search, waitForTransaction, type Credentials, type SearchBody } from './helpers';
import { imageNameOf } from '@edge-image-search/devtools/image-names';


/** Real photos and cut-outs from test/fixtures/images, of different kinds. */
const ORIGINALS = [
  'animals_birds_hen.png',
  'animals_mammals_cats_tiger.png',
  'food_fruit_avocado.png',
  'vehicles_garbagetruck.png',
  'opencv-doc_aero1.jpg',
  'sklearn_flower.jpg',
  'skimage_coffee.jpg',
  'hobbies_camera_35mm.png',
];
const copyNameOf = (file: string): string => `${imageNameOf(file)}.copy`;

describe('GET /search, end to end through the queue and the real inference service', () => {
  let app: Credentials;
  let stranger: Credentials;

  beforeAll(async () => {
    [app, stranger] = [await createApp('catalog'), await createApp('stranger')];
    const status = await insertAndWait(app, [
      ...ORIGINALS.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(`/images/${file}`) })),
      ...ORIGINALS.map((file) => ({ im_name: copyNameOf(file), im_url: fixtureUrl(`/near-copy/${file}`) })),
    ]);
    expect(status, JSON.stringify(status.error_list)).toMatchObject({ success_count: ORIGINALS.length * 2, fail_count: 0 });
  });

  it.each(ORIGINALS)('finds the near-copy of %s first', async (file) => {
    const { status, body } = await search(app, `im_name=${imageNameOf(file)}&score=true`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'OK', method: 'search', error: [], page: 1, limit: 10 });
    expect(body.result[0]?.im_name).toBe(copyNameOf(file));
  });

  it('ranks by descending score in 0..1, never returns the query image, and omits scores unless asked', async () => {
    const { body } = await search(app, 'im_name=animals_birds_hen&score=true&limit=100');
    expect(body.total).toBe(ORIGINALS.length * 2 - 1);
    expect(body.result).toHaveLength(body.total);
    const scores = body.result.map((item) => item.score ?? -1);
    expect(scores.every((score) => score >= 0 && score <= 1)).toBe(true);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores[0]).toBeGreaterThan(scores[1]! + 0.05);
    expect(body.result.map((item) => item.im_name)).not.toContain('animals_birds_hen');

    const plain = await search(app, 'im_name=animals_birds_hen');
    expect(plain.body.result[0]).toEqual({ im_name: 'animals_birds_hen.copy' });
  });

  it('pages without gaps or duplicates', async () => {
    const all = (await search(app, 'im_name=opencv-doc_aero1&limit=15')).body.result.map((item) => item.im_name);
    const first = (await search(app, 'im_name=opencv-doc_aero1&limit=4&page=1')).body;
    const second = (await search(app, 'im_name=opencv-doc_aero1&limit=4&page=2')).body;
    expect(first.total).toBe(15);
    expect([...first.result, ...second.result].map((item) => item.im_name)).toEqual(all.slice(0, 8));
    const beyond = (await search(app, 'im_name=opencv-doc_aero1&limit=10&page=3')).body;
    expect(beyond).toMatchObject({ status: 'OK', total: 15, result: [] });
  });

  it("keeps applications apart: another app's image is not found", async () => {
    const { status, body } = await search(stranger, 'im_name=animals_birds_hen');
    expect(status).toBe(200);
    expect(body).toEqual({
      status: 'fail',
      method: 'search',
      error: ['Image not found with im_name.'],
      page: 1,
      limit: 10,
      total: 0,
      result: [],
      reqid: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });

  it('answers with the app key of a browser client', async () => {
    const response = await call(`/search?im_name=vehicles_garbagetruck&access_key=${app.app_key}`);
    const body = await response.json<SearchBody>();
    expect(body.result[0]?.im_name).toBe('vehicles_garbagetruck.copy');
  });

  it('replaces an image re-inserted under the same name', async () => {
    await insertAndWait(app, [{ im_name: 'hobbies_camera_35mm.copy', im_url: fixtureUrl('/near-copy/animals_mammals_cats_tiger.png') }]);
    const tiger = await search(app, 'im_name=animals_mammals_cats_tiger&limit=2');
    expect(tiger.body.result.map((item) => item.im_name).sort()).toEqual(['animals_mammals_cats_tiger.copy', 'hobbies_camera_35mm.copy']);
  });

  it('says so while the query image is still being processed', async () => {
    const response = await insert(app, [{ im_name: 'late-arrival', im_url: fixtureUrl('/slow/animals_birds_rooster.png') }]);
    const { trans_id } = await response.json<{ trans_id: number }>();
    const early = await search(app, 'im_name=late-arrival');
    expect(early).toMatchObject({ status: 200, body: { status: 'fail', error: ['The query image is still being processed, please try again later.'] } });
    await waitForTransaction(app, trans_id);
    expect((await search(app, 'im_name=late-arrival')).body.status).toBe('OK');
  });

  it('rejects bad paging parameters in the envelope', async () => {
    for (const [query, message] of [
      ['limit=0', 'limit must be between 1 and 1000.'],
      ['limit=1001', 'limit must be between 1 and 1000.'],
      ['page=abc', 'page must be an integer.'],
      ['score=maybe', 'score must be true or false.'],
    ]) {
      const { status, body } = await search(app, `im_name=animals_birds_hen&${query}`);
      expect(status, query).toBe(200);
      // An unreadable page or limit is reported as its default.
      expect(body, query).toMatchObject({ status: 'fail', method: 'search', error: [message], page: 1, limit: 10, total: 0, result: [] });
    }
  });
});
