import { beforeAll, describe, expect, it } from 'vitest';
import { iou } from '@edge-image-search/contract/boxes';
import { createApp, discoversearch, fixtureUrl, imageBytes, insertAndWait, uploadsearch, type Credentials, type DiscoverBody } from './helpers';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/**
 * Issue 20, rule 3: a person is no product, but what they wear is. Each detected person is posed (MoveNet) and the
 * garments its keypoints support are objects of their own: Top, Bottom, Shoe. Photos of people from Debian packages
 * (test/fixtures/README.md); the drawn boxes are those of test/fixtures/detection-truth.json.
 */
const PLAYER = {
  file: '/images/opencv-doc_basketball1.jpg',
  /** The standing player on the left, as the detector boxes him. */
  person: [34, 81, 168, 473],
  drawn: { Top: [37, 138, 126, 287], Bottom: [40, 282, 134, 476] },
};
const PEOPLE = ['/images/skimage_astronaut.jpg', '/images/opencv-doc_messi5.jpg', '/images/skimage_camera.jpg', '/people/opencv-doc_vtest_frame560.jpg'];
const CATALOG = [PLAYER.file, ...PEOPLE, '/images/opencv-doc_plant.jpg', '/images/skimage_chelsea.jpg'];
const GARMENTS = ['Top', 'Bottom', 'Shoe'];
const middleY = (box: number[]): number => (box[1]! + box[3]!) / 2;

describe('what people wear', () => {
  let app: Credentials;
  let player: DiscoverBody;

  beforeAll(async () => {
    app = await createApp('outfits');
    await insertAndWait(app, CATALOG.map((file) => ({ im_name: imageNameOf(file), im_url: fixtureUrl(file) })));
    player = (await discoversearch(app, { image: await imageBytes(PLAYER.file), detection_sensitivity: 'high', detection_limit: '30', score: 'true' })).body;
  });

  it('a standing player wears a Top, a Bottom and two Shoes, top to bottom, inside the player', () => {
    const inside = player.objects.filter((object) => GARMENTS.includes(object.type) && iou(object.box, PLAYER.person) > 0);
    const [x1, y1, x2, y2] = PLAYER.person as [number, number, number, number];
    expect(inside.map((object) => object.type).sort()).toEqual(['Bottom', 'Shoe', 'Shoe', 'Top']);
    for (const { box } of inside) expect(box[0]! >= x1 && box[1]! >= y1 && box[2]! <= x2 && box[3]! <= y2, `${box} inside ${PLAYER.person}`).toBe(true);
    const byType = (type: string) => inside.filter((object) => object.type === type).map((object) => middleY(object.box));
    expect(Math.max(...byType('Top'))).toBeLessThan(Math.min(...byType('Bottom')));
    expect(Math.max(...byType('Bottom'))).toBeLessThan(Math.min(...byType('Shoe')));
    // Where a person drew them.
    for (const [type, drawn] of Object.entries(PLAYER.drawn)) {
      expect(Math.max(...inside.filter((object) => object.type === type).map((object) => iou(object.box, drawn)))).toBeGreaterThanOrEqual(0.5);
    }
  });

  it.each(PEOPLE)('%s: the person wears a Top, and the type list names what the pose gives', async (file) => {
    const { body } = await discoversearch(app, { image: await imageBytes(file), detection_sensitivity: 'high', detection_limit: '30' });
    expect(body.objects.map((object) => object.type)).toContain('Top');
    expect(body.object_types_list.map((entry) => entry.type)).toEqual(expect.arrayContaining(GARMENTS));
  });

  it('a garment is searchable: by its box it finds the same garment in the catalog, and only images with that type or no object', async () => {
    const top = player.objects.find((object) => object.type === 'Top' && iou(object.box, PLAYER.drawn.Top) >= 0.5)!;
    const { body } = await uploadsearch(app, { im_id: player.im_id, box: top.box.join(','), score: 'true', limit: '20' });
    expect(body.product_types[0]).toMatchObject({ type: 'Top', box: top.box });
    expect(body.result[0]).toMatchObject({ im_name: imageNameOf(PLAYER.file) });
    expect(body.result[0]!.score!).toBeGreaterThan(0.99);
    // Only catalog images with a Top (the photos of people) or with no object at all (the cat) may match: not the
    // plant, whose objects are pots.
    const allowed = new Set([PLAYER.file, ...PEOPLE, '/images/skimage_chelsea.jpg'].map(imageNameOf));
    expect(body.result.length).toBeGreaterThan(1);
    for (const item of body.result) expect(allowed.has(item.im_name), item.im_name).toBe(true);
  });
});
