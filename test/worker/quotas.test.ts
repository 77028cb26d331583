import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { QUERY_IMAGE_TTL_HOURS } from '../../src/storage/query-images';
import { formatTimestamp } from '../../src/time';
import { adminHeaders, call, createApp, fixtureUrl, imageBytes, insertAndWait, runSweeper, uploadsearch, type Credentials } from './helpers';

/**
 * What bounds one caller: the operator's per-minute limits on an application's searches and uploaded bytes, and the
 * expiry of query images. An app key is public, so these are what keep one page from exhausting the service.
 */

const BUSY = 'System busy, please try again later.';
const EMPTY_COLLECTION = "App doesn't have any images.";

const setLimits = (app: Credentials, limits: Record<string, number | null>) =>
  call(`/admin/apps/${app.app_id}`, { method: 'PATCH', headers: adminHeaders, body: JSON.stringify(limits) });

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
});

describe('query images', () => {
  it(`expire after ${QUERY_IMAGE_TTL_HOURS} hours: the im_id is unknown at once, and the sweeper deletes the image`, async () => {
    const app = await createApp('expiry');
    await insertAndWait(app, [{ im_name: 'hen', im_url: fixtureUrl('/images/animals_birds_hen.png') }]);
    const { body } = await uploadsearch(app, { im_url: fixtureUrl('/images/animals_birds_hen.png') });
    expect(body.status).toBe('OK');
    const row = await env.DB.prepare('SELECT blob_key FROM query_images WHERE id = ?').bind(body.im_id).first<{ blob_key: string }>();
    expect(await env.BLOBS.head(row!.blob_key)).not.toBeNull();
    expect((await uploadsearch(app, { im_id: body.im_id })).body.status).toBe('OK');

    const expired = formatTimestamp(new Date(Date.now() - (QUERY_IMAGE_TTL_HOURS * 60 + 1) * 60_000));
    await env.DB.prepare('UPDATE query_images SET created_at = ? WHERE id = ?').bind(expired, body.im_id).run();
    expect((await uploadsearch(app, { im_id: body.im_id })).body).toMatchObject({ status: 'fail', error: ['Image not found with im_id.'] });

    await runSweeper();
    expect(await env.DB.prepare('SELECT id FROM query_images WHERE id = ?').bind(body.im_id).first()).toBeNull();
    expect(await env.BLOBS.head(row!.blob_key)).toBeNull();
  });
});
