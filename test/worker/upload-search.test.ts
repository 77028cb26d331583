import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, discoversearch, fixtureUrl, hits, imageBytes, insertAndWait, uploadsearch, type Credentials } from './helpers';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/** A failed search answers HTTP 200, `status: 'fail'` and an empty page: the paging asked for, or 1 and 10. */
const failedUpload = (message: string) => ({
  status: 200,
  body: { status: 'fail', method: 'uploadsearch', error: [message], page: 1, limit: 10, total: 0, result: [], reqid: expect.any(String) },
});

const CATALOG = ['animals_birds_hen.png', 'animals_mammals_cats_tiger.png', 'food_fruit_avocado.png', 'opencv-doc_aero1.jpg', 'skimage_coffee.jpg'];

describe('POST /uploadsearch', () => {
  let app: Credentials;

  beforeAll(async () => {
    app = await createApp('catalog');
    await insertAndWait(app, CATALOG.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(`/images/${file}`) })));
  });

  it('finds an uploaded near-copy, keeps the upload and answers a new im_id', async () => {
    const { status, body } = await uploadsearch(app, { image: await imageBytes('/near-copy/animals_mammals_cats_tiger.png'), score: 'true' });
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'OK', method: 'uploadsearch', error: [], page: 1, limit: 10, total: CATALOG.length });
    expect(body.result[0]?.im_name).toBe('animals_mammals_cats_tiger');
    expect(body.im_id).toMatch(/^[0-9a-f]{32}$/);
    expect(body.product_types_list.length).toBeGreaterThan(0);
    expect(body.product_types_list.every((entry) => typeof entry.type === 'string' && typeof entry.attributes_list === 'object')).toBe(true);
    const again = await uploadsearch(app, { image: await imageBytes('/near-copy/animals_mammals_cats_tiger.png') });
    expect(again.body.im_id).not.toBe(body.im_id);
  });

  it('searches by im_url, then by im_id without downloading again', async () => {
    const path = '/images/skimage_coffee.jpg/by-url';
    const byUrl = await uploadsearch(app, { im_url: fixtureUrl(path) });
    expect(byUrl.body.result[0]?.im_name).toBe('skimage_coffee');
    expect(await hits(path)).toBe(1);
    const byId = await uploadsearch(app, { im_id: byUrl.body.im_id, score: 'true' });
    expect(byId.body).toMatchObject({ status: 'OK', im_id: byUrl.body.im_id });
    expect(byId.body.result[0]).toMatchObject({ im_name: 'skimage_coffee' });
    expect(await hits(path)).toBe(1);
  });

  it("does not know another application's im_id", async () => {
    const { body } = await uploadsearch(app, { image: await imageBytes('/images/skimage_coffee.jpg') });
    const stranger = await createApp();
    await insertAndWait(stranger, [{ im_name: 'x', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    expect(await uploadsearch(stranger, { im_id: body.im_id })).toEqual(failedUpload('Image not found with im_id.'));
  });

  it('restricts the search to a box, in original pixels', async () => {
    const whole = await uploadsearch(app, { image: await imageBytes('/images/opencv-doc_aero1.jpg'), detection: ' ', score: 'true' });
    const boxed = await uploadsearch(app, { im_id: whole.body.im_id, box: '0,0,160,120', detection: ' ', score: 'true' });
    expect(whole.body.result[0]).toMatchObject({ im_name: 'opencv-doc_aero1' });
    expect(boxed.body.result[0]!.score!).toBeLessThan(whole.body.result[0]!.score! - 0.05);
  });

  it('answers with an app key, for browser clients', async () => {
    const { status, body } = await uploadsearch(null, { access_key: app.app_key, image: await imageBytes('/images/skimage_coffee.jpg') });
    expect(status).toBe(200);
    expect(body.status).toBe('OK');
    expect(body.result[0]?.im_name).toBe('skimage_coffee');
  });

  it.each([
    ['no image source', {}, 'Exactly one of image, im_url and im_id is required.'],
    ['two image sources', { im_url: 'http://127.0.0.1:9/a.jpg', im_id: 'abc' }, 'Exactly one of image, im_url and im_id is required.'],
    ['an unknown im_id', { im_id: '0123456789abcdef0123456789abcdef' }, 'Image not found with im_id.'],
    ['a box with spaces', { im_id: 'x', box: '0, 0, 10, 10' }, 'box must be x1,y1,x2,y2: four non-negative integers, no spaces.'],
    ['an inverted box', { im_id: 'x', box: '50,50,10,10' }, 'box must have x1 < x2 and y1 < y2.'],
    ['a bad sensitivity', { im_id: 'x', detection_sensitivity: 'medium' }, 'detection_sensitivity must be low or high.'],
    ['a limit over 1000', { im_id: 'x', limit: '1001' }, 'limit must be between 1 and 1000.'],
  ])('rejects %s', async (_, fields, message) => {
    expect(await uploadsearch(app, fields)).toEqual(failedUpload(message));
  });

  it.each([
    ['bytes that are no image', '/images/manifest.json', 'Invalid image file format.'],
    ['an image under 100 px', '/images/food_fruit_apple_fuji.png', 'The image format or dimension is invalid.'],
    ['a header declaring over 40 megapixels', '/png-header/8000x5001', 'The image format or dimension is invalid.'],
    ['a corrupt image', '/truncated/skimage_coffee.jpg', 'Invalid image or im_url.'],
  ])('answers the spec error for %s, uploaded or by URL', async (_, path, message) => {
    const uploaded = await uploadsearch(app, { image: await imageBytes(path) });
    expect(uploaded).toEqual(failedUpload(message));
    const byUrl = await uploadsearch(app, { im_url: fixtureUrl(path) });
    expect(byUrl).toEqual(failedUpload(message));
  });

  it.each([
    ['an HTTP error', '/status/404', 'Could not download the image, please try again later.'],
    ['a server that never answers', '/hang', 'Timeout while downloading image, please try again later.'],
  ])('answers the spec error for a download with %s', async (_, path, message) => {
    expect(await uploadsearch(app, { im_url: fixtureUrl(path) })).toEqual(failedUpload(message));
  });

  it.each(['not a url', 'ftp://127.0.0.1/x.jpg', 'file:///etc/passwd'])('answers that %s is no image URL, not to try again later', async (url) => {
    expect(await uploadsearch(app, { im_url: url })).toEqual(failedUpload('Invalid image or im_url.'));
  });

  it('refuses a file over 10 MB as too large', async () => {
    const big = new Blob([await (await imageBytes('/images/skimage_coffee.jpg')).arrayBuffer(), new Uint8Array(10 * 1024 * 1024)]);
    expect(await uploadsearch(app, { image: big })).toEqual(failedUpload('The image file exceeds the 10MB limit.'));
  });

  it("says so when the application has no images", async () => {
    const empty = await createApp();
    const response = await uploadsearch(empty, { image: await imageBytes('/images/skimage_coffee.jpg') });
    expect(response).toEqual(failedUpload("App doesn't have any images."));
  });
});

describe('POST /discoversearch', () => {
  let app: Credentials;

  beforeAll(async () => {
    app = await createApp('catalog');
    await insertAndWait(app, CATALOG.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(`/images/${file}`) })));
  });

  it('searches the whole image as one object when detection is off', async () => {
    const { status, body } = await discoversearch(app, { image: await imageBytes('/near-copy/food_fruit_avocado.png'), detection: 'no-such-type', result_limit: '3' });
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'OK', method: 'discoversearch', result_limit: 3, detection_limit: 5, page: 1 });
    expect(body.objects).toHaveLength(1);
    expect(body.objects[0]).toMatchObject({ type: 'other', total: CATALOG.length });
    expect(body.objects[0]!.result).toHaveLength(3);
    expect(body.objects[0]!.result[0]?.im_name).toBe('food_fruit_avocado');
  });

  it.each([
    ['box and point together', { box: '0,0,10,10', point: '5,5' }, 'box and point cannot be used together.'],
    ['six points', { point: ['1,1', '2,2', '3,3', '4,4', '5,5', '6,6'] }, 'At most 5 points are allowed.'],
    ['a malformed point', { point: '1;1' }, 'point must be x,y: two non-negative integers, no spaces.'],
    ['detection_limit 0', { detection_limit: '0' }, 'detection_limit must be between 1 and 30.'],
    ['detection_limit 31', { detection_limit: '31' }, 'detection_limit must be between 1 and 30.'],
    ['result_limit 0', { result_limit: '0' }, 'result_limit must be between 1 and 1000.'],
  ])('rejects %s', async (_, fields, message) => {
    const response = await discoversearch(app, { im_id: 'x', ...fields });
    // An unreadable result_limit is reported as its default.
    const empty = { page: 1, result_limit: 10, objects: [], reqid: expect.any(String) };
    expect(response).toEqual({ status: 200, body: { status: 'fail', method: 'discoversearch', error: [message], ...empty } });
  });
});
