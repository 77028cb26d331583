import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp, fixtureUrl, insertAndWait, search, type Credentials, catalogOf } from './helpers';

type Variant = { name: string; extension: string; format: string; lossy: boolean };

/** Every format the spec lists, made from a real photo by the fixture server (`devtools/image-formats.ts`). */
const SOURCE = 'skimage_chelsea.jpg';
const variants = await (await fetch(fixtureUrl('/variants'))).json<Variant[]>();
const variantNameOf = (variant: Variant): string => `chelsea.${variant.name}`;

describe('every spec format is inserted, told by its bytes', () => {
  let app: Credentials;

  beforeAll(async () => {
    app = await createApp();
    const status = await insertAndWait(app, [
      // The URL ends in the variant's own extension, which the Worker ignores.
      ...variants.map((variant) => ({ im_name: variantNameOf(variant), im_url: fixtureUrl(`/as-${variant.name}/${SOURCE}/x.${variant.extension}`) })),
      { im_name: 'other-photo', im_url: fixtureUrl('/images/opencv-doc_aero1.jpg') },
    ]);
    expect(status.error_list).toEqual([]);
  });

  it('covers every extension of spec 2.1', () => {
    const extensions = new Set(variants.map((variant) => variant.extension));
    for (const extension of ['jpg', 'png', 'gif', 'bmp', 'dib', 'webp', 'pbm', 'pgm', 'ppm', 'sr', 'ras', 'tif', 'tiff']) {
      expect(extensions).toContain(extension);
    }
  });

  it.each(variants.map((variant) => [variant.name, variant] as const))('%s', async (_, variant) => {
    const row = await (await catalogOf(app)).prepare('SELECT format, width, height FROM images WHERE app_id = ? AND im_name = ?')
      .bind(app.app_id, variantNameOf(variant))
      .first();
    expect(row).toEqual({ format: variant.format, width: 451, height: 300 });
  });

  it('finds the same picture in every full-colour format before any other photo', async () => {
    const png = variants.find((variant) => variant.name === 'png')!;
    const { body } = await search(app, `im_name=${variantNameOf(png)}&limit=100&score=true`);
    const scores = new Map(body.result.map((item) => [item.im_name, item.score!]));
    const other = scores.get('other-photo')!;
    // Grey, 16-colour and black-and-white variants are other pictures to a colour model; the rest must match.
    const fullColour = variants.filter((variant) => variant !== png && !/grey|gray|pgm|pbm|bilevel|1bit|-1$|4bit|rle4|16-colour/.test(variant.name));
    for (const variant of fullColour) expect(scores.get(variantNameOf(variant)), variant.name).toBeGreaterThan(other);
  });
});
