import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { objectVectors } from '../../src/storage/vectors';
import { basicAuth, call, createApp, discoversearch, fixtureUrl, imageBytes, insertAndWait, retiredLeft, uploadsearch, type Credentials, catalogOf } from './helpers';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/**
 * Real detections of the bundled COCO detector on the shared images (inference/README.md, Detection): the pots of
 * these photos are its true finds, as "Vase and Pot".
 */
const PLANT = { file: 'opencv-doc_plant.jpg', pot: [192, 199, 370, 331], glass: [78, 186, 173, 291] };
const CATALOG = [
  'opencv-doc_plant.jpg',
  'opencv-doc_aloeL.jpg',
  'opencv-doc_board.jpg',
  'opencv-doc_scenetext03.jpg',
  'skimage_chelsea.jpg',
  'animals_birds_hen.png',
  'animals_mammals_cats_tiger.png',
  'opencv-doc_aero1.jpg',
];
const centre = (box: number[]): string => `${Math.round((box[0]! + box[2]!) / 2)},${Math.round((box[1]! + box[3]!) / 2)}`;

const expectBoxNear = (box: number[] | undefined, expected: number[], tolerance = 8): void => {
  expect(box).toHaveLength(4);
  box!.forEach((value, i) => expect(Math.abs(value - expected[i]!)).toBeLessThanOrEqual(tolerance));
};

describe('object detection and the object-level index', () => {
  let app: Credentials;
  /** im_name -> the types of its indexed objects */
  const catalogTypes = new Map<string, Set<string>>();

  beforeAll(async () => {
    app = await createApp('rooms');
    await insertAndWait(app, CATALOG.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(`/images/${file}`) })));
    const { results } = await (await catalogOf(app)).prepare('SELECT id, im_name, object_count FROM images WHERE app_id = ?')
      .bind(app.app_id)
      .all<{ id: number; im_name: string; object_count: number }>();
    for (const image of results) {
      const ids = Array.from({ length: image.object_count }, (_, k) => `${image.id}.${k}`);
      const vectors = await objectVectors(env, env.EMBED_MODEL).getByIds(ids);
      expect(vectors).toHaveLength(image.object_count);
      catalogTypes.set(image.im_name, new Set(vectors.map((vector) => String(vector.metadata?.type))));
    }
  });

  it('indexes the detected objects of catalog images with their type', () => {
    expect(catalogTypes.get('opencv-doc_plant')).toEqual(new Set(['Vase and Pot']));
    expect(catalogTypes.get('skimage_chelsea')).toEqual(new Set());
  });

  it('uploadsearch lists the detected objects in original pixels and searches the primary one', async () => {
    const { status, body } = await uploadsearch(app, { image: await imageBytes(`/images/${PLANT.file}`), score: 'true' });
    expect(status).toBe(200);
    expect(body.product_types.map((object) => object.type)).toEqual(['Vase and Pot']);
    expectBoxNear(body.product_types[0]!.box, PLANT.pot);
    expect(body.product_types_list.map((entry) => entry.type)).toContain('Vase and Pot');
    // The primary object is matched against catalog objects of its type: the same pot is found, all but identical.
    expect(body.result[0]).toMatchObject({ im_name: 'opencv-doc_plant' });
    expect(body.result[0]!.score!).toBeGreaterThan(0.99);
  });

  it('a zero-size box is a point: the object there is searched', async () => {
    const { body: first } = await uploadsearch(app, { image: await imageBytes(`/images/${PLANT.file}`) });
    // The glass scores under `low`'s floor: a point names it where `high` keeps it, as discover lists it.
    const { body } = await uploadsearch(app, { im_id: first.im_id, box: `${centre(PLANT.glass)},${centre(PLANT.glass)}`, score: 'true', detection_sensitivity: 'high' });
    expect(body.product_types).toHaveLength(1);
    expectBoxNear(body.product_types[0]!.box, PLANT.glass);
    expect(body.result[0]).toMatchObject({ im_name: 'opencv-doc_plant' });
    // Each catalog image appears once, with its best score.
    expect(new Set(body.result.map((item) => item.im_name)).size).toBe(body.result.length);
  });

  it('results of an object are catalog images with an object of its type, or with no object at all', async () => {
    const { body } = await discoversearch(app, { image: await imageBytes(`/images/${PLANT.file}`), detection_sensitivity: 'high', result_limit: '100' });
    expect(body.objects.map((object) => object.type)).toEqual(['Vase and Pot', 'Vase and Pot']);
    expectBoxNear(body.objects[0]!.box, PLANT.pot);
    expectBoxNear(body.objects[1]!.box, PLANT.glass);
    for (const object of body.objects) {
      expect(object.total).toBe(object.result.length);
      for (const item of object.result) {
        const types = catalogTypes.get(item.im_name)!;
        expect(types.size === 0 || types.has(object.type), `${item.im_name} for ${object.type}`).toBe(true);
      }
    }
  });

  it('detection_sensitivity low keeps only the confident objects, high more', async () => {
    const image = await imageBytes(`/images/${PLANT.file}`);
    expect((await discoversearch(app, { image, detection_sensitivity: 'low' })).body.objects).toHaveLength(1);
    expect((await discoversearch(app, { image, detection_sensitivity: 'high' })).body.objects).toHaveLength(2);
  });

  it('detection_limit caps the objects, most confident first', async () => {
    const { body } = await discoversearch(app, { image: await imageBytes('/images/opencv-doc_board.jpg'), detection_sensitivity: 'high', detection_limit: '2' });
    expect(body).toMatchObject({ detection_limit: 2 });
    expect(body.objects).toHaveLength(2);
    expect(body.objects[0]!.score).toBeGreaterThanOrEqual(body.objects[1]!.score);
  });

  it('points pick the objects at them; a point on nothing picks none', async () => {
    // detection_limit is ignored with points (spec 4.6), even out of its range.
    const { body } = await discoversearch(app, { image: await imageBytes(`/images/${PLANT.file}`), point: [centre(PLANT.glass), centre(PLANT.pot), '5,5'], detection_sensitivity: 'high', detection_limit: '50' });
    expect(body).toMatchObject({ status: 'OK', detection_limit: 5 });
    expect(body.objects).toHaveLength(2);
    expectBoxNear(body.objects[0]!.box, PLANT.glass);
    expectBoxNear(body.objects[1]!.box, PLANT.pot);
  });

  it('a box limits the analysis to its area; boxes stay in original pixels', async () => {
    const { body } = await discoversearch(app, { image: await imageBytes('/images/opencv-doc_aloeL.jpg'), box: '300,200,1024,887', detection_sensitivity: 'high' });
    expect(body.objects.length).toBeGreaterThan(0);
    expectBoxNear(body.objects[0]!.box, [573, 635, 858, 872], 10);
    const outside = await discoversearch(app, { image: await imageBytes('/images/opencv-doc_aloeL.jpg'), box: '0,0,300,300', detection_sensitivity: 'high' });
    expect(outside.body.objects.every((object) => object.box[2]! <= 300 && object.box[3]! <= 300)).toBe(true);
  });

  it('detection names a type (in any case), or turns detection off when it is no type', async () => {
    const image = await imageBytes(`/images/${PLANT.file}`);
    expect((await discoversearch(app, { image, detection: 'vase and pot', detection_sensitivity: 'high' })).body.objects).toHaveLength(2);
    expect((await discoversearch(app, { image, detection: 'Bed' })).body.objects).toEqual([]);
    const off = (await discoversearch(app, { image, detection: ' ' })).body.objects;
    expect(off).toHaveLength(1);
    expect(off[0]).toMatchObject({ type: 'other', box: [0, 0, 500, 333] });
  });

  it('re-insert and remove leave no stale object vector', async () => {
    const version = async () =>
      (await (await catalogOf(app)).prepare('SELECT id, object_count FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, 'opencv-doc_board').first<{ id: number; object_count: number }>())!;
    const objectIds = (row: { id: number; object_count: number }) => Array.from({ length: row.object_count }, (_, k) => `${row.id}.${k}`);
    const first = await version();
    expect(first.object_count).toBeGreaterThan(2);
    await insertAndWait(app, [{ im_name: 'opencv-doc_board', im_url: fixtureUrl(`/images/${PLANT.file}`) }]);
    // The new version's objects replace the old version's, which are gone.
    expect(await retiredLeft(app)).toBe(0);
    const second = await version();
    expect(second.object_count).toBe(2);
    expect(await objectVectors(env, env.EMBED_MODEL).getByIds(objectIds(first))).toEqual([]);
    expect(await objectVectors(env, env.EMBED_MODEL).getByIds(objectIds(second))).toHaveLength(2);
    const form = new URLSearchParams({ 'im_name[0]': 'opencv-doc_board' });
    const removed = await call('/remove', { method: 'POST', headers: basicAuth(app), body: form });
    expect(await removed.json()).toMatchObject({ status: 'OK', total: 1 });
    expect(await objectVectors(env, env.EMBED_MODEL).getByIds(objectIds(second))).toEqual([]);
  });
});
