import { beforeAll, describe, expect, it } from 'vitest';
import { env } from 'cloudflare:test';
import { boxArea } from '@edge-image-search/contract/boxes';
import type { Box } from '../../src/ports/inference/types';
import { contains } from '../../src/search/region';
import {
  basicAuth,
  call,
  createApp,
  discoversearch,
  fixtureUrl,
  imageBytes,
  insertAndWait,
  searchForm,
  uploadsearch,
  type Credentials,
  type DetectedObject,
  type ResultItem,
  type UploadBody,
  catalogOf,
} from './helpers';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/**
 * Issue 20, rule 1: a box (or a point) that names an object the detector sees in the whole image is that object. The
 * same object searched by `/discoversearch`, by its point and by its box (at the same sensitivity) has the same type,
 * score and results; any other box is searched as its own content. Scenes with several detected objects.
 */
const HIGH = { detection_sensitivity: 'high' };
const SCENES = ['opencv-doc_plant.jpg', 'opencv-doc_basketball1.jpg', 'opencv-doc_aloeL.jpg', 'opencv-doc_board.jpg', 'opencv-doc_messi5.jpg', 'opencv-doc_left.jpg', 'skimage_astronaut.jpg'];
const CATALOG = [...SCENES, 'skimage_chelsea.jpg', 'hobbies_camera_35mm.png', 'household_dishes_pitcher_small.png', 'animals_mammals_cats_tiger.png'];

type Found = DetectedObject & { total: number; result: ResultItem[] };
const inside = (box: number[], point: [number, number]): boolean => contains(box as Box, point);

/** A point in the object that no smaller object holds: the point that names it (the smallest object at a point). */
function pointOf(object: Found, objects: Found[]): [number, number] | undefined {
  const smaller = objects.filter((other) => other !== object && boxArea(other.box) <= boxArea(object.box));
  const [x1, y1, x2, y2] = object.box as [number, number, number, number];
  for (let fy = 0.5; fy < 1; fy += 0.1) {
    for (const fx of [0.5, 0.3, 0.7, 0.15, 0.85]) {
      for (const y of [y1 + (y2 - y1) * fy, y1 + (y2 - y1) * (1 - fy)]) {
        const point: [number, number] = [Math.round(x1 + (x2 - x1) * fx), Math.round(y)];
        if (!smaller.some((other) => inside(other.box, point))) return point;
      }
    }
  }
  return undefined;
}

const firstResult = (result: ResultItem[]) => result[0] && { im_name: result[0].im_name, score: result[0].score };

describe('a box or a point names the object the detector sees', () => {
  let app: Credentials;
  /** Per scene: its im_id and every object `/discoversearch` reports at `high`. */
  const scenes = new Map<string, { imId: string; objects: Found[] }>();

  beforeAll(async () => {
    app = await createApp('boxes');
    await insertAndWait(app, CATALOG.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(`/images/${file}`) })));
    for (const file of SCENES) {
      const { body } = await discoversearch(app, { image: await imageBytes(`/images/${file}`), detection_sensitivity: 'high', detection_limit: '30', score: 'true' });
      expect(body.status).toBe('OK');
      scenes.set(file, { imId: body.im_id, objects: body.objects });
    }
  });

  it('the scenes hold enough detected objects to compare', () => {
    expect([...scenes.values()].reduce((sum, scene) => sum + scene.objects.length, 0)).toBeGreaterThanOrEqual(20);
  });

  it.each(SCENES)('%s: every object found by discover, by its box and by its point has the same type, score and results', async (file) => {
    const { imId, objects } = scenes.get(file)!;
    for (const object of objects) {
      const expected = { type: object.type, score: object.score, box: object.box, attributes: object.attributes };
      const byBox = await uploadsearch(app, { im_id: imId, box: object.box.join(','), score: 'true', ...HIGH });
      expect(byBox.body.product_types, `${file} box ${object.box}`).toEqual([expected]);
      expect(firstResult(byBox.body.result)).toEqual(firstResult(object.result));
      expect(byBox.body.total).toBe(object.total);

      const point = pointOf(object, objects);
      if (!point) continue;
      const byPoint = await uploadsearch(app, { im_id: imId, box: `${point},${point}`, score: 'true', ...HIGH });
      expect(byPoint.body.product_types, `${file} point ${point}`).toEqual([expected]);
      expect(firstResult(byPoint.body.result)).toEqual(firstResult(object.result));
      const discoveredAt = await discoversearch(app, { im_id: imId, point: point.join(','), score: 'true', ...HIGH });
      expect(discoveredAt.body.objects).toHaveLength(1);
      expect(discoveredAt.body.objects[0]).toMatchObject(expected);
      expect(firstResult(discoveredAt.body.objects[0]!.result)).toEqual(firstResult(object.result));
      // Discover within the box: the object it is drawn around is among its objects, the more confident first.
      const discoveredIn = await discoversearch(app, { im_id: imId, box: object.box.join(','), score: 'true', detection_limit: '30', ...HIGH });
      const scores = discoveredIn.body.objects.map((found) => found.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      const drawnAround = discoveredIn.body.objects.find((found) => found.score === expected.score && found.box.join() === expected.box.join());
      expect(drawnAround).toMatchObject(expected);
      expect(firstResult(drawnAround!.result)).toEqual(firstResult(object.result));
      // However few objects are asked for, the one the box is drawn around is among them.
      const onlyOne = await discoversearch(app, { im_id: imId, box: object.box.join(','), detection_limit: '1', ...HIGH });
      expect(onlyOne.body.objects).toHaveLength(1);
      expect(onlyOne.body.objects[0]).toMatchObject(expected);
    }
  });

  it('a box drawn loosely around an object is still that object, reported with the detector box', async () => {
    const { imId, objects } = scenes.get('opencv-doc_plant.jpg')!;
    const pot = objects[0]!;
    const [x1, y1, x2, y2] = pot.box as [number, number, number, number];
    const loose = [x1 - 12, y1 - 9, x2 + 10, y2 + 6].map((value) => Math.max(0, value));
    const { body } = await uploadsearch(app, { im_id: imId, box: loose.join(','), score: 'true' });
    expect(body.product_types).toEqual([{ type: pot.type, attributes: pot.attributes, score: pot.score, box: pot.box }]);
    expect(firstResult(body.result)).toEqual(firstResult(pot.result));
  });

  it('a box names only what the sensitivity keeps: at low, a box around a weak find is its own content', async () => {
    const { imId, objects } = scenes.get('opencv-doc_plant.jpg')!;
    const glass = objects.find((object) => object.score < 0.35)!;
    const atHigh = await uploadsearch(app, { im_id: imId, box: glass.box.join(','), ...HIGH });
    expect(atHigh.body.product_types[0]).toMatchObject({ type: glass.type, score: glass.score, box: glass.box });
    const atLow = await uploadsearch(app, { im_id: imId, box: glass.box.join(',') });
    expect(atLow.body.product_types).toHaveLength(1);
    expect(atLow.body.product_types[0]!.score).not.toBe(glass.score);
  });

  it('a box that names no detected object is searched as its own content, type other', async () => {
    const { imId, objects } = scenes.get('opencv-doc_plant.jpg')!;
    const empty = [0, 0, 60, 60];
    expect(objects.some((object) => inside(object.box, [30, 30]))).toBe(false);
    const { body } = await uploadsearch(app, { im_id: imId, box: empty.join(','), score: 'true', qinfo: 'true' });
    expect(body.status).toBe('OK');
    expect(body.product_types).toEqual([{ type: 'other', attributes: {}, score: 1, box: empty }]);
    expect(body.result.length).toBeGreaterThan(0);
    const discovered = await discoversearch(app, { im_id: imId, box: empty.join(',') });
    expect(discovered.body.objects.map(({ type, box }) => ({ type, box }))).toEqual([{ type: 'other', box: empty }]);
  });

  it('a search by im_id needs the kept image only for a box around no object: a point or a named box reads no pixels', async () => {
    const { body: first } = await uploadsearch(app, { image: await imageBytes('/images/opencv-doc_plant.jpg'), score: 'true' });
    const pot = first.product_types[0]!;
    const { blob_key: key } = (await (await catalogOf(app)).prepare('SELECT blob_key FROM query_images WHERE id = ?').bind(first.im_id).first<{ blob_key: string }>())!;
    // The stored pixels gone (as nothing ever removes them before the row expires): what needs no pixels still answers.
    await env.BLOBS.delete(key);
    const named = await uploadsearch(app, { im_id: first.im_id, box: pot.box.join(','), score: 'true' });
    expect(named.body.product_types).toEqual([pot]);
    const point = `${Math.round((pot.box[0]! + pot.box[2]!) / 2)},${Math.round((pot.box[1]! + pot.box[3]!) / 2)}`;
    expect((await uploadsearch(app, { im_id: first.im_id, box: `${point},${point}` })).body.product_types[0]).toMatchObject({ type: pot.type, box: pot.box });
    // A box around nothing needs the pixels: without them, the im_id is unknown.
    const content = await uploadsearch(app, { im_id: first.im_id, box: '0,0,60,60' });
    expect(content.body).toMatchObject({ status: 'fail', error: ['Image not found with im_id.'] });
  });

  it('a search by im_id reuses the kept analysis instead of running inference on the whole image again', async () => {
    const upload = (fields: Record<string, string | Blob>) => call('/uploadsearch', { method: 'POST', headers: basicAuth(app), body: searchForm(fields) });
    const first = await upload({ image: await imageBytes('/images/opencv-doc_plant.jpg') });
    expect(first.headers.get('server-timing')).toMatch(/inference;/);
    const firstBody = await first.json<UploadBody>();
    const keptAnalysis = async () => {
      const row = await (await catalogOf(app)).prepare('SELECT analysis FROM query_images WHERE id = ?').bind(firstBody.im_id).first<{ analysis: string }>();
      return (JSON.parse(row!.analysis) as { objects: DetectedObject[] }).objects.map(({ type, score, box }) => ({ type, score, box }));
    };
    const analysis = await keptAnalysis();
    expect(analysis.length).toBeGreaterThan(0);
    const again = await upload({ im_id: firstBody.im_id });
    expect(again.status).toBe(200);
    expect(again.headers.get('server-timing')).not.toMatch(/inference;/);
    const againBody = await again.json<UploadBody>();
    expect(againBody.product_types).toEqual(firstBody.product_types);
    // The kept embedding (packed) searches exactly as the fresh one did.
    expect(againBody.result.length).toBeGreaterThan(0);
    expect(againBody.result).toEqual(firstBody.result);
    // An image kept without an analysis (or with one that does not read) is analysed again, and the analysis kept.
    for (const stored of [null, '{"objects": "not an analysis"}']) {
      await (await catalogOf(app)).prepare('UPDATE query_images SET analysis = ? WHERE id = ?').bind(stored, firstBody.im_id).run();
      const analysedAgain = await upload({ im_id: firstBody.im_id });
      expect(analysedAgain.headers.get('server-timing')).toMatch(/inference;/);
      expect((await analysedAgain.json<UploadBody>()).product_types).toEqual(firstBody.product_types);
      expect(await keptAnalysis()).toEqual(analysis);
    }
  });
});
