import { describe, expect, it } from 'vitest';
import { AppCache, appCacheTtlMs } from '../../src/storage/app-cache';

/** A cache on a clock the test moves. */
function cacheAt(maxEntries: number) {
  const clock = { ms: 1_000 };
  return { clock, cache: new AppCache<string>(maxEntries, () => clock.ms) };
}

describe('the isolate cache of calling applications (docs/decisions.md, Caching the calling application)', () => {
  it('keeps an entry under each of its keys until its time is up', () => {
    const { clock, cache } = cacheAt(10);
    cache.keep(['access_key:a', 'id:app1'], 'app1', 'v1', 500, cache.mark());
    expect(cache.get('access_key:a')).toBe('v1');
    expect(cache.get('id:app1')).toBe('v1');
    clock.ms += 499;
    expect(cache.get('id:app1')).toBe('v1');
    clock.ms += 1;
    expect(cache.get('id:app1')).toBeUndefined();
    expect(cache.get('access_key:a')).toBeUndefined();
  });

  it('forgets every key of an application, and only its', () => {
    const { cache } = cacheAt(10);
    cache.keep(['access_key:a', 'id:app1'], 'app1', 'v1', 500, cache.mark());
    cache.keep(['access_key:b', 'id:app2'], 'app2', 'v2', 500, cache.mark());
    cache.forget('app1');
    expect(cache.get('access_key:a')).toBeUndefined();
    expect(cache.get('id:app1')).toBeUndefined();
    expect(cache.get('id:app2')).toBe('v2');
  });

  it('does not keep what was read before a change', () => {
    const { cache } = cacheAt(10);
    const mark = cache.mark();
    cache.forget('app1');
    cache.keep(['id:app1'], 'app1', 'old', 500, mark);
    expect(cache.get('id:app1')).toBeUndefined();
  });

  it('holds at most its bound, the least recently used going first', () => {
    const { cache } = cacheAt(3);
    for (const id of ['a', 'b', 'c']) cache.keep([id], id, id, 500, cache.mark());
    expect(cache.get('a')).toBe('a');
    cache.keep(['d'], 'd', 'd', 500, cache.mark());
    expect(['a', 'b', 'c', 'd'].map((key) => cache.get(key))).toEqual(['a', undefined, 'c', 'd']);
  });

  it('keeps nothing with a time of 0, and reads APP_CACHE_TTL_MS with its default', () => {
    const { cache } = cacheAt(3);
    cache.keep(['a'], 'a', 'a', appCacheTtlMs({ APP_CACHE_TTL_MS: '0' }), cache.mark());
    expect(cache.get('a')).toBeUndefined();
    expect(appCacheTtlMs({})).toBe(10_000);
    expect(appCacheTtlMs({ APP_CACHE_TTL_MS: '1500' })).toBe(1500);
    expect(appCacheTtlMs({ APP_CACHE_TTL_MS: 'soon' })).toBe(10_000);
  });
});
