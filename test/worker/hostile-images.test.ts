/**
 * The hostile images of `devtools/hostile-images.ts` through the Worker: inserted by `im_url` (the fixture server
 * serves each one, under its own content type) and uploaded to `/uploadsearch`. Each gets the spec's error for what
 * it is, or is inserted as the picture it shows, at its displayed size; the inference service keeps answering.
 */
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { iou } from '@edge-image-search/contract/boxes';
import {
  basicAuth,
  call,
  createApp,
  fixtureUrl,
  imageBytes,
  insert,
  search,
  uploadsearch,
  waitForTransaction,
  type Credentials,
  type DetectedObject,
  type UploadBody,
  catalogOf,
} from './helpers';

type Hostile = {
  name: string;
  group: string;
  outcome: 'too_large' | 'undecodable' | 'decoded' | 'either';
  format: string | null;
  width: number;
  height: number;
  shows?: 'source' | 'grey' | 'first-frame' | 'blank';
  contentType: string;
};

// Also makes the fixture server build the files (seconds) before any download of them waits on it.
const { source, images } = await (await fetch(fixtureUrl('/hostile'))).json<{ source: string; images: Hostile[] }>();
const named = (name: string): Hostile => images.find((image) => image.name === name)!;
const pathOf = (name: string): string => `/hostile/${name}`;
/** A lying file's URL ends in the extension its content type claims (the fixture server ignores that segment). */
const urlOf = ({ name, group, contentType }: Hostile): string =>
  fixtureUrl(group === 'lying' ? `${pathOf(name)}/photo.${contentType.split('/')[1]}` : pathOf(name));
/** The source picture, pixel for pixel, as PNG. */
const UPRIGHT = 'lying-png-as-jpeg';

const INSERT_ERRORS = {
  too_large: { error_code: 203, error_message: 'Unsupported image dimension.' },
  undecodable: { error_code: 202, error_message: 'Unsupported image format.' },
};
/** Spec 7.3: the header cannot be read, its size is out of bounds, or the inference service cannot decode it. */
const UPLOAD_ERRORS = {
  format: 'Invalid image file format.',
  dimension: 'The image format or dimension is invalid.',
  undecodable: 'Invalid image or im_url.',
};

describe('hostile images', () => {
  let app: Credentials;
  const errors = new Map<string, { error_code: number; error_message: string }>();
  /** What the detector finds in the upright source, by upload. */
  let uprightObjects: DetectedObject[];

  beforeAll(async () => {
    app = await createApp('hostile');
    // At most 100 images an insert.
    for (let start = 0; start < images.length; start += 100) {
      const batch = images.slice(start, start + 100).map((image) => ({ im_name: image.name, im_url: urlOf(image) }));
      const { trans_id } = await (await insert(app, batch)).json<{ trans_id: number }>();
      const status = await waitForTransaction(app, trans_id, 170_000);
      expect(status.success_count + status.fail_count).toBe(batch.length);
      for (const { im_name, ...error } of status.error_list) errors.set(im_name, error);
    }
    const upright = await uploadsearch(app, { image: await imageBytes(pathOf(UPRIGHT)), limit: '1' });
    uprightObjects = upright.body.product_types;
    expect(uprightObjects.length).toBeGreaterThan(0);
  }, 180_000);

  it('covers every group, and every spec format among the bombs and the truncated files', () => {
    const groups = ['bomb', 'expanding', 'truncated', 'corrupt', 'lying', 'animated', 'colour', 'orientation'];
    expect(new Set(images.map((image) => image.group))).toEqual(new Set(groups));
    for (const group of ['bomb', 'truncated']) {
      const formats = new Set(images.filter((image) => image.group === group).map((image) => image.format));
      expect(formats, group).toEqual(new Set(['jpeg', 'png', 'gif', 'webp', 'tiff', 'bmp', 'pnm', 'sunraster']));
    }
  });

  it.each(images.map((image) => [image.name, image] as const))('insert of %s', async (_, image) => {
    const row = await (await catalogOf(app)).prepare('SELECT format, width, height FROM images WHERE app_id = ? AND im_name = ?')
      .bind(app.app_id, image.name)
      .first();
    const error = errors.get(image.name);
    if (image.outcome === 'decoded') {
      expect(error).toBeUndefined();
      // As displayed: EXIF orientation applied, as the inference service places its boxes.
      expect(row).toEqual({ format: image.format, width: image.width, height: image.height });
    } else if (image.outcome === 'either') {
      if (error) expect(Object.values(INSERT_ERRORS)).toContainEqual(error);
      else expect(row).toMatchObject({ format: image.format });
    } else {
      expect(error).toEqual(INSERT_ERRORS[image.outcome]);
      expect(row).toBeNull();
    }
  });

  it('finds every copy of the source (CMYK, 16-bit, palette, animated, turned...) as the same picture', async () => {
    const { status, body } = await search(app, `im_name=${UPRIGHT}&limit=200&score=true`);
    expect(status).toBe(200);
    const scores = new Map(body.result.map((item) => [item.im_name, item.score!]));
    const copies = images.filter(({ name, shows }) => name !== UPRIGHT && ['source', 'first-frame'].includes(shows!));
    expect(copies.length).toBeGreaterThan(20);
    for (const copy of copies) expect(scores.get(copy.name), copy.name).toBeGreaterThan(0.97);
    const blanks = images.filter(({ shows }) => shows === 'blank');
    for (const blank of blanks) expect(scores.get(blank.name), blank.name).toBeLessThan(0.8);
  });

  it.each(images.map((image) => [image.name, image] as const))('upload of %s', async (_, image) => {
    const { status, body } = await uploadsearch(app, { image: await imageBytes(pathOf(image.name)), limit: '1' });
    if (image.outcome === 'decoded') {
      expect(status, JSON.stringify(body.error)).toBe(200);
      expect(body).toMatchObject({ status: 'OK', method: 'uploadsearch', error: [] });
      // Turned or mirrored by EXIF, the same objects in the same places as displayed.
      if (image.group === 'orientation' && image.shows === 'source') {
        for (const object of uprightObjects) {
          const sameType = body.product_types.filter((candidate) => candidate.type === object.type);
          const overlaps = sameType.map((candidate) => iou(candidate.box, object.box));
          expect(Math.max(0, ...overlaps), `${object.type} at ${object.box}`).toBeGreaterThan(0.8);
        }
      }
      return;
    }
    if (image.outcome === 'either' && body.status === 'OK') return;
    const allowed =
      image.outcome === 'too_large'
        ? [UPLOAD_ERRORS.dimension]
        : image.outcome === 'undecodable'
          ? [UPLOAD_ERRORS.format, UPLOAD_ERRORS.undecodable]
          : Object.values(UPLOAD_ERRORS);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'fail', method: 'uploadsearch', total: 0, result: [], reqid: expect.any(String) });
    expect(body.error).toHaveLength(1);
    expect(allowed).toContain(body.error[0]);
  });

  it('takes the bytes for the format, whatever the file name and content type of the upload say', async () => {
    const form = new FormData();
    const png = await (await imageBytes(pathOf(UPRIGHT))).arrayBuffer();
    form.append('image', new File([png], 'photo.jpg', { type: 'image/jpeg' }));
    const response = await call('/uploadsearch', { method: 'POST', body: form, headers: basicAuth(app) });
    expect(response.status).toBe(200);
    const { status, im_id } = await response.json<UploadBody>();
    expect(status).toBe('OK');
    const kept = await (await catalogOf(app)).prepare('SELECT format, width, height FROM query_images WHERE id = ?')
      .bind(im_id)
      .first();
    expect(kept).toEqual({ format: 'png', width: named(UPRIGHT).width, height: named(UPRIGHT).height });
  });

  it('leaves the inference service answering, and searches working', async () => {
    expect((await fetch(`${env.INFERENCE_URL}/health`)).status).toBe(200);
    const original = await imageBytes(`/images/${source}`);
    const { status, body } = await uploadsearch(app, { image: original, score: 'true', detection: ' ' });
    expect(status).toBe(200);
    expect(body.status).toBe('OK');
    expect(body.result[0]!.score).toBeGreaterThan(0.97);
  });
});
