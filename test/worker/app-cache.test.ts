import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { serverTimingEntries } from '../../scripts/lib/server-timing';
import { hashKey } from '../../src/auth/keys';
import { adminHeaders, basicAuth, call, createApp, replaceSchema, setLimits, type Credentials } from './helpers';

/**
 * The isolate's copy of the calling application and its schema (docs/decisions.md, Caching the calling application):
 * a change through the admin API is seen at the next call; one written straight to D1, as another isolate's admin
 * call writes it, within APP_CACHE_TTL_MS (vitest.config.ts sets it short) and not before.
 */

const TTL_MS = Number(env.APP_CACHE_TTL_MS);
const INVALID_KEYS = 'Invalid access key or secret key.';
const EMPTY_COLLECTION = "App doesn't have any images.";
const BUSY = 'System busy, please try again later.';
const NOT_SEARCHABLE = 'group_by field brand must be a searchable field.';

/** A colour search grouped by `brand`: it reads the application and its schema, then finds the collection empty. */
async function groupedSearch(auth: { headers?: Record<string, string>; appKey?: string }): Promise<{ error: string[]; timing: string | null }> {
  const query = `color=ff0000&group_by=brand${auth.appKey ? `&access_key=${auth.appKey}` : ''}`;
  const response = await call(`/colorsearch?${query}`, { headers: auth.headers ?? {} });
  expect(response.status).toBe(200);
  return { error: (await response.json<{ error: string[] }>()).error, timing: response.headers.get('server-timing') };
}

const asBackend = (app: Credentials) => groupedSearch({ headers: basicAuth(app) });
const asBrowser = (app: Credentials) => groupedSearch({ appKey: app.app_key });

/** Past the bound: every entry kept before the change has expired. */
const pastTheBound = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, TTL_MS + 300));

const BRAND = [{ name: 'brand', type: 'string', searchable: true }] as const;

describe('the calling application kept in the isolate', () => {
  it('has a short bound for the tests', () => {
    expect(TTL_MS).toBeGreaterThan(0);
    expect(TTL_MS).toBeLessThanOrEqual(3000);
  });

  it('sees a schema replaced through the admin API at the next call', async () => {
    const app = await createApp();
    for (const search of [asBrowser, asBackend]) expect((await search(app)).error).toEqual([NOT_SEARCHABLE]);
    await replaceSchema(app, [...BRAND]);
    for (const search of [asBrowser, asBackend]) expect((await search(app)).error).toEqual([EMPTY_COLLECTION]);
    await replaceSchema(app, []);
    for (const search of [asBrowser, asBackend]) expect((await search(app)).error).toEqual([NOT_SEARCHABLE]);
  });

  it('sees limits set through the admin API at the next call', async () => {
    const app = await createApp('limited', [...BRAND]);
    expect((await asBrowser(app)).error).toEqual([EMPTY_COLLECTION]);
    expect((await setLimits(app, { searches_per_minute: 0 })).status).toBe(200);
    expect((await asBrowser(app)).error).toEqual([BUSY]);
    expect((await setLimits(app, { searches_per_minute: null })).status).toBe(200);
    expect((await asBrowser(app)).error).toEqual([EMPTY_COLLECTION]);
  });

  it('sees a secret key revoked in D1 by another isolate within the bound, not before', async () => {
    const app = await createApp('revoked', [...BRAND]);
    expect((await asBackend(app)).error).toEqual([EMPTY_COLLECTION]);
    await env.DB.prepare("UPDATE apps SET secret_key_hash = 'revoked' WHERE id = ?").bind(app.app_id).run();
    expect((await asBackend(app)).error).toEqual([EMPTY_COLLECTION]);
    await pastTheBound();
    expect((await asBackend(app)).error).toEqual([INVALID_KEYS]);
  });

  it('sees an app key rotated in D1 by another isolate within the bound, and the new key at once', async () => {
    const app = await createApp('rotated', [...BRAND]);
    expect((await asBrowser(app)).error).toEqual([EMPTY_COLLECTION]);
    const rotated = { ...app, app_key: 'f'.repeat(32) };
    await env.DB.prepare('UPDATE apps SET app_key_hash = ? WHERE id = ?').bind(await hashKey(rotated.app_key), app.app_id).run();
    // An unknown key is never kept, so the new one is looked up, and found, at its first call.
    expect((await asBrowser(rotated)).error).toEqual([EMPTY_COLLECTION]);
    expect((await asBrowser(app)).error).toEqual([EMPTY_COLLECTION]);
    await pastTheBound();
    expect((await asBrowser(app)).error).toEqual([INVALID_KEYS]);
    expect((await asBrowser(rotated)).error).toEqual([EMPTY_COLLECTION]);
  });

  it('sees a schema changed in D1 by another isolate within the bound, not before', async () => {
    const app = await createApp('schema', [...BRAND]);
    expect((await asBackend(app)).error).toEqual([EMPTY_COLLECTION]);
    await env.DB.prepare('DELETE FROM app_fields WHERE app_id = ?').bind(app.app_id).run();
    expect((await asBackend(app)).error).toEqual([EMPTY_COLLECTION]);
    await pastTheBound();
    expect((await asBackend(app)).error).toEqual([NOT_SEARCHABLE]);
  });

  it('reads the application and its schema in one round trip, then not at all while it is kept', async () => {
    const app = await createApp('steady', [...BRAND]);
    const roundTrips = (timing: string | null): number => {
      const entries = serverTimingEntries(timing);
      return Number(entries['d1-primary']?.desc ?? 0) + Number(entries['d1-replica']?.desc ?? 0);
    };
    // The search's own read (is the collection empty?) is the same each time; the application and schema come first.
    const first = roundTrips((await asBrowser(app)).timing);
    const second = roundTrips((await asBrowser(app)).timing);
    const byBackend = roundTrips((await asBackend(app)).timing);
    expect(first).toBeGreaterThan(1);
    expect(second).toBe(first - 1);
    // Found by its access key, the application is read again (once), its schema with it.
    expect(byBackend).toBe(first);
  });

  it('answers the admin API from D1, not from the copy', async () => {
    const app = await createApp('admin', [...BRAND]);
    expect((await asBrowser(app)).error).toEqual([EMPTY_COLLECTION]);
    await env.DB.prepare("UPDATE apps SET name = 'renamed' WHERE id = ?").bind(app.app_id).run();
    const described = await call(`/admin/apps/${app.app_id}`, { headers: adminHeaders });
    expect(await described.json()).toMatchObject({ name: 'renamed' });
  });
});
