import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, fixtureUrl, insertAndWait, search, type Credentials, type SearchBody, catalogOf } from './helpers';

/** Synthetic images with known palettes: stripes of pure colours in known shares. */
const SYNTHETIC: Record<string, string> = {
  red: 'ff0000:100',
  'red-blue': 'ff0000:70,0000ff:30',
  'blue-red': 'ff0000:20,0000ff:80',
  'dark-red': '990000:100',
  green: '00ff00:100',
  'yellow-green': 'ffff00:50,00ff00:50',
};
const REAL = ['skimage_coffee.jpg', 'skimage_chelsea.jpg', 'animals_mammals_cats_tiger.png', 'food_fruit_avocado.png', 'opencv-doc_aero1.jpg', 'sklearn_flower.jpg', 'vehicles_garbagetruck.png', 'animals_birds_hen.png'];

const colorsearch = (app: Credentials, query: string) => search(app, query, '/colorsearch');

describe('GET /colorsearch', () => {
  let app: Credentials;

  beforeAll(async () => {
    app = await createApp('colors');
    await insertAndWait(app, [
      ...Object.entries(SYNTHETIC).map(([name, palette]) => ({ im_name: name, im_url: fixtureUrl(`/palette/${palette}`) })),
      ...REAL.map((file) => ({ im_name: file, im_url: fixtureUrl(`/images/${file}`) })),
    ]);
  });

  const names = (body: SearchBody): string[] => body.result.map((item) => item.im_name);

  it('ranks the image whose main colour is the queried one above one where it is minor', async () => {
    const { status, body } = await colorsearch(app, 'color=ff0000&score=true&limit=20');
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'OK', method: 'colorsearch', error: [], page: 1, limit: 20 });
    const order = names(body);
    expect(order[0]).toBe('red');
    expect(body.result[0]!.score!).toBeGreaterThan(0.95);
    expect(order.indexOf('red-blue')).toBeLessThan(order.indexOf('blue-red'));
    expect(order.indexOf('dark-red')).toBeLessThan(order.indexOf('green') === -1 ? Infinity : order.indexOf('green'));
    const scores = body.result.map((item) => item.score!);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores.every((score) => score >= 0 && score <= 1)).toBe(true);
  });

  it('follows the ratios: the palette with the same shares comes first', async () => {
    expect(names((await colorsearch(app, 'color=ff0000:70&color=0000ff:30')).body)[0]).toBe('red-blue');
    expect(names((await colorsearch(app, 'color=ff0000:20&color=0000ff:80')).body)[0]).toBe('blue-red');
    // Ratios are normalised: 7:3 is 70:30.
    expect(names((await colorsearch(app, 'color=ff0000:7&color=0000ff:3')).body)[0]).toBe('red-blue');
    // Without ratios the colours share equally.
    expect(names((await colorsearch(app, 'color=ffff00&color=00ff00')).body)[0]).toBe('yellow-green');
  });

  it('finds real images by their own extracted colours near the top', async () => {
    for (const file of REAL) {
      const row = await (await catalogOf(app)).prepare('SELECT colors FROM images WHERE app_id = ? AND im_name = ?').bind(app.app_id, file).first<{ colors: string }>();
      // rrggbb and the ratio times 255, per colour (migrations/0023).
      const palette = (row!.colors.match(/.{8}/g) ?? []).map((color) => ({ hex: color.slice(0, 6), ratio: parseInt(color.slice(6), 16) / 255 })).slice(0, 5);
      expect(palette.length, file).toBeGreaterThan(0);
      const query = palette.map((color) => `color=${color.hex}:${Math.max(1, Math.round(color.ratio * 100))}`).join('&');
      const top = names((await colorsearch(app, `${query}&limit=3`)).body);
      expect(top, file).toContain(file);
    }
  });

  it.each([
    ['no colour', '', 'color is required: a 6-digit hex color, optionally with :ratio.'],
    ['a short hex', 'color=fff', 'Invalid color fff: use a 6-digit hex color such as ff0000.'],
    ['a non-hex colour', 'color=ff00zz', 'Invalid color ff00zz: use a 6-digit hex color such as ff0000.'],
    ['a leading #', 'color=%23ff0000', 'Invalid color #ff0000: use a 6-digit hex color such as ff0000.'],
    ['ratio 0', 'color=ff0000:0', 'Invalid ratio in ff0000:0: use an integer from 1 to 100.'],
    ['ratio 101', 'color=ff0000:101', 'Invalid ratio in ff0000:101: use an integer from 1 to 100.'],
    ['a fractional ratio', 'color=ff0000:5.5', 'Invalid ratio in ff0000:5.5: use an integer from 1 to 100.'],
    ['six colours', ['ff0000', '00ff00', '0000ff', 'ffff00', '00ffff', 'ff00ff'].map((hex) => `color=${hex}`).join('&'), 'At most 5 colors are allowed.'],
    ['a limit over 1000', 'color=ff0000&limit=1001', 'limit must be between 1 and 1000.'],
  ])('rejects %s', async (_, query, message) => {
    const { status, body } = await colorsearch(app, query);
    expect(status).toBe(200);
    // An unreadable limit is reported as the default.
    const empty = { page: 1, limit: 10, total: 0, result: [], reqid: expect.any(String) };
    expect(body).toEqual({ status: 'fail', method: 'colorsearch', error: [message], ...empty });
  });

  it('says so when the application has no images', async () => {
    const { status, body } = await colorsearch(await createApp(), 'color=ff0000&page=2&limit=5');
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'fail', error: ["App doesn't have any images."], page: 2, limit: 5, total: 0, result: [] });
  });
});
