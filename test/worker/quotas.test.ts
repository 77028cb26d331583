import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { QUERY_IMAGE_TTL_HOURS } from '../../src/storage/query-images';
import { formatTimestamp } from '../../src/time';
import { call, createApp, discoversearch, fixtureUrl, hits, imageBytes, insertAndWait, runSweeper, searchForm, setLimits, uploadsearch, type Credentials, catalogOf } from './helpers';

/**
 * What bounds one caller: the operator's per-minute limits on an application's searches and uploaded bytes, and the
 * expiry of query images. An app key is public, so these are what keep one page from exhausting the service.
 */

const BUSY = 'System busy, please try again later.';
const EMPTY_COLLECTION = "App doesn't have any images.";

/** Counts are per minute: a test that needs several calls in one minute starts with enough of it left. */
async function startOfEnoughMinute(): Promise<void> {
  const left = 60 - new Date().getSeconds();
  if (left < 15) await new Promise((resolve) => setTimeout(resolve, left * 1000 + 100));
}

const colorsearch = async (app: Credentials) => {
  const response = await call(`/colorsearch?color=ff0000&access_key=${app.app_key}`);
  return { retryAfter: response.headers.get('retry-after'), body: await response.json<{ status: string; error: string[] }>() };
};

describe('per-application limits a minute', () => {
  it('answers searches past searches_per_minute busy until the next minute, for that application only', async () => {
    const [limited, other] = await Promise.all([createApp('limited'), createApp('other')]);
    const set = await setLimits(limited, { searches_per_minute: 2 });
    expect(await set.json()).toMatchObject({ searches_per_minute: 2, upload_bytes_per_minute: null });
    await startOfEnoughMinute();

    // Within the limit the calls go through (to the empty collection's answer); the third is refused before it.
    for (let k = 0; k < 2; k++) expect((await colorsearch(limited)).body.error).toEqual([EMPTY_COLLECTION]);
    const refused = await colorsearch(limited);
    expect(refused.body).toMatchObject({ status: 'fail', error: [BUSY] });
    const retryAfter = Number(refused.retryAfter);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await colorsearch(other)).body.error).toEqual([EMPTY_COLLECTION]);

    // Lifted by the operator, the calls go through again.
    await setLimits(limited, { searches_per_minute: null });
    expect((await colorsearch(limited)).body.error).toEqual([EMPTY_COLLECTION]);
  });

  it('answers uploads past upload_bytes_per_minute busy, counting the bytes of each image', async () => {
    const app = await createApp('upload-limited');
    await setLimits(app, { upload_bytes_per_minute: 30_000 });
    await startOfEnoughMinute();
    const image = await imageBytes('/images/animals_birds_hen.png');
    // One upload fits the minute's bytes, two do not.
    expect(image.size).toBeGreaterThan(15_000);
    expect(image.size).toBeLessThan(30_000);
    expect((await uploadsearch(app, { image })).body.error).toEqual([EMPTY_COLLECTION]);
    expect((await uploadsearch(app, { image })).body).toMatchObject({ status: 'fail', error: [BUSY] });
  });

  // 278,537 bytes: one download fits 300,000 bytes a minute, two do not.
  const BIG = '/images/opencv-doc_aloeL.jpg';

  for (const [endpoint, search] of [['/uploadsearch', uploadsearch], ['/discoversearch', discoversearch]] as const) {
    it(`counts the bytes of query images downloaded by ${endpoint} against upload_bytes_per_minute`, async () => {
      const app = await createApp('download-limited');
      await insertAndWait(app, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
      await setLimits(app, { upload_bytes_per_minute: 300_000 });
      await startOfEnoughMinute();
      // A path of this test's own, for its count of downloads.
      const path = `${BIG}/${app.app_id}`;
      const first = await search(app, { im_url: fixtureUrl(path) });
      expect(first.body.status).toBe('OK');
      // A search by im_id reads no new bytes: only the call counts.
      expect((await search(app, { im_id: first.body.im_id })).body.status).toBe('OK');
      for (let k = 0; k < 7; k++) {
        const refused = await call(endpoint, { method: 'POST', body: searchForm({ im_url: fixtureUrl(path), access_key: app.app_key }) });
        expect(refused.status).toBe(200);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await refused.json()).toMatchObject({ status: 'fail', error: [BUSY] });
      }
      // The second download is cut at what the minute had left, which it passes: the others are refused unread.
      expect(await hits(path)).toBe(2);
    });
  }

  it('counts /image calls (the console thumbnails) under searches_per_minute', async () => {
    const app = await createApp('thumbnails-limited');
    await insertAndWait(app, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    await setLimits(app, { searches_per_minute: 3 });
    await startOfEnoughMinute();
    expect((await colorsearch(app)).body.status).toBe('OK');
    for (let k = 0; k < 2; k++) expect((await call(`/image?im_name=hen&access_key=${app.app_key}`)).status).toBe(200);
    const refused = await call(`/image?im_name=hen&access_key=${app.app_key}`);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({ status: 'fail', method: 'image', error: [BUSY] });
    expect((await colorsearch(app)).body).toMatchObject({ status: 'fail', error: [BUSY] });
  });

  it('counts without a round trip to the D1 primary: a Durable Object per application keeps the minute', async () => {
    const app = await createApp('limited-near');
    await setLimits(app, { searches_per_minute: 10, upload_bytes_per_minute: 1_000_000 });
    await startOfEnoughMinute();
    expect((await colorsearch(app)).body.error).toEqual([EMPTY_COLLECTION]);
    const counted = await call(`/colorsearch?color=ff0000&access_key=${app.app_key}`);
    expect(await counted.json()).toMatchObject({ error: [EMPTY_COLLECTION] });
    expect(counted.headers.get('server-timing')).toMatch(/(^|, )d1-primary;dur=[\d.]+;desc="0"(,|$)/);
  });
});

describe('query images', () => {
  it(`expire after ${QUERY_IMAGE_TTL_HOURS} hours: the im_id is unknown at once, and the sweeper deletes the image`, async () => {
    const app = await createApp('expiry');
    await insertAndWait(app, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    const { body } = await uploadsearch(app, { im_url: fixtureUrl('/images/animals_birds_hen.png') });
    expect(body.status).toBe('OK');
    const row = await (await catalogOf(app)).prepare('SELECT blob_key FROM query_images WHERE id = ?').bind(body.im_id).first<{ blob_key: string }>();
    expect(await env.BLOBS.head(row!.blob_key)).not.toBeNull();
    expect((await uploadsearch(app, { im_id: body.im_id })).body.status).toBe('OK');

    const expired = formatTimestamp(new Date(Date.now() - (QUERY_IMAGE_TTL_HOURS * 60 + 1) * 60_000));
    await (await catalogOf(app)).prepare('UPDATE query_images SET created_at = ? WHERE id = ?').bind(expired, body.im_id).run();
    expect((await uploadsearch(app, { im_id: body.im_id })).body).toMatchObject({ status: 'fail', error: ['Image not found with im_id.'] });

    await runSweeper();
    expect(await (await catalogOf(app)).prepare('SELECT id FROM query_images WHERE id = ?').bind(body.im_id).first()).toBeNull();
    expect(await env.BLOBS.head(row!.blob_key)).toBeNull();
  });
});
