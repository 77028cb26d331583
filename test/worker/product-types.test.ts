/**
 * An application's own product types and the attributes of detected objects (docs/decisions.md, "Product types and
 * attributes"), on the bundled detector (closed vocabulary: COCO's label map and the pose model's garments): types
 * set and refused by the admin API, the type lists and `detection` following them from the next search, and every
 * object's colour among its type's `attributes_list`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { COLOR_NAMES } from '@edge-image-search/contract/attributes';
import { adminHeaders, call, createApp, fixtureUrl, imageBytes, insertAndWait, uploadsearch, discoversearch, type Credentials } from './helpers';

const PLANT = '/images/opencv-doc_plant.jpg';

const setTypes = (app: Credentials, body: unknown) =>
  call(`/admin/apps/${app.app_id}/product-types`, { method: 'PUT', headers: adminHeaders, body: JSON.stringify(body) });

describe('PUT /admin/apps/{app_id}/product-types', () => {
  let app: Credentials;
  beforeAll(async () => {
    app = await createApp('types-admin');
  });

  it('sets types the detector reports, shown by GET, and DELETE gives the defaults back', async () => {
    const types = [{ type: 'Vase and Pot', attributes_list: { color: ['green', 'brown'] } }, { type: 'Seating' }];
    const response = await setTypes(app, { types });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'OK', product_types: types });
    const got = await (await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders })).json();
    expect(got).toMatchObject({ product_types: types });
    const reset = await call(`/admin/apps/${app.app_id}/product-types`, { method: 'DELETE', headers: adminHeaders });
    expect(await reset.json()).toMatchObject({ status: 'OK', product_types: null });
  });

  const long = 'a'.repeat(201);
  it.each([
    ['no types', { types: [] }, 'types: give at least one type'],
    ['101 types', { types: Array.from({ length: 101 }, (_, i) => ({ type: `T${i}` })) }, 'types: at most 100 types'],
    ['a type twice', { types: [{ type: 'Bag' }, { type: 'bag' }] }, 'types: type names must be unique (whatever their case)'],
    ['an unknown key', { types: [{ type: 'Bag', promts: ['a bag'] }] }, 'types.0: unknown key "promts"; the keys are type, prompts, attributes_list'],
    ['empty prompts', { types: [{ type: 'Bag', prompts: [] }] }, 'types.0.prompts:'],
    ['an empty prompt', { types: [{ type: 'Bag', prompts: [' '] }] }, 'types.0.prompts.0:'],
    ['11 prompts', { types: [{ type: 'Bag', prompts: Array.from({ length: 11 }, (_, i) => `bag ${i}`) }] }, 'types.0.prompts:'],
    ['a prompt over 200 characters', { types: [{ type: 'Bag', prompts: [long] }] }, 'types.0.prompts.0:'],
    ['a type the detector cannot report', { types: [{ type: 'Sneaker' }] }, 'types[0] (Sneaker): not a type'],
    ['prompts for a closed-vocabulary detector', { types: [{ type: 'Bag', prompts: ['a handbag'] }] }, 'types[0] (Bag): prompts need an open-vocabulary detector'],
    ['a colour the service cannot name', { types: [{ type: 'Bag', attributes_list: { color: ['red', 'teal'] } }] }, 'types[0] (Bag): "teal" not colour names of the service'],
  ])('refuses %s with 400 naming the problem', async (_, body, message) => {
    const response = await setTypes(app, body);
    expect(response.status).toBe(400);
    const answer = await response.json<{ status: string; error: string[] }>();
    expect(answer.status).toBe('fail');
    expect(answer.error[0]).toContain(message);
  });
});

describe("an application's types in its searches", () => {
  let own: Credentials;
  let plain: Credentials;
  beforeAll(async () => {
    [own, plain] = [await createApp('types-own'), await createApp('types-default')];
    for (const app of [own, plain]) expect((await insertAndWait(app, [{ im_name: 'plant', im_url: fixtureUrl(PLANT) }])).success_count).toBe(1);
  });

  it("without its own, every object's colour is one of its type's attributes_list values, which list the colour names", async () => {
    const { body } = await discoversearch(plain, { image: await imageBytes(PLANT), detection_sensitivity: 'high', detection_limit: '30' });
    expect(body.status).toBe('OK');
    expect(body.object_types_list.length).toBeGreaterThan(0);
    for (const entry of body.object_types_list) expect(entry.attributes_list).toEqual({ color: COLOR_NAMES });
    expect(body.objects.length).toBeGreaterThan(0);
    for (const object of body.objects) {
      expect(object.attributes).toEqual({ color: [expect.any(String)] });
      expect(COLOR_NAMES).toContain((object.attributes as { color: string[] }).color[0]);
    }
  });

  it('lists its types with their attributes_list, names colours among them, and follows a change from the next search', async () => {
    const potColours = ['green', 'brown', 'black', 'white'];
    expect((await setTypes(own, { types: [{ type: 'Seating' }, { type: 'Vase and Pot', attributes_list: { color: potColours } }] })).status).toBe(200);
    const first = await uploadsearch(own, { image: await imageBytes(PLANT) });
    expect(first.body.status).toBe('OK');
    expect(first.body.product_types_list).toEqual([
      { type: 'Seating', attributes_list: { color: COLOR_NAMES } },
      { type: 'Vase and Pot', attributes_list: { color: potColours } },
    ]);
    const [pot] = first.body.product_types;
    expect(pot).toMatchObject({ type: 'Vase and Pot' });
    expect(potColours).toContain((pot!.attributes as { color: string[] }).color[0]);
    // `detection` takes the application's types, in any case, and no others.
    expect((await uploadsearch(own, { im_id: first.body.im_id, detection: 'vase AND pot' })).body.product_types).toHaveLength(1);
    expect((await uploadsearch(own, { im_id: first.body.im_id, detection: 'Bag' })).body.product_types).toEqual([]);

    // The same kept image, searched again after a change of types: analysed again under the new ones.
    expect((await setTypes(own, { types: [{ type: 'Bag' }] })).status).toBe(200);
    const after = await uploadsearch(own, { im_id: first.body.im_id });
    expect(after.body.product_types_list).toEqual([{ type: 'Bag', attributes_list: { color: COLOR_NAMES } }]);
    expect(after.body.product_types.every((object) => object.type === 'Bag')).toBe(true);
  });
});
