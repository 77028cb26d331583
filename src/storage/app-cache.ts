/**
 * The isolate's copy of what nearly every request reads first: the calling application, found by one of its keys,
 * and its schema (docs/decisions.md, Caching the calling application). An entry lives APP_CACHE_TTL_MS, the bound
 * within which another isolate's change is seen; a change made through this isolate forgets the application at once.
 * At most APP_CACHE_ENTRIES entries, the least recently used going first, so memory stays bounded however many
 * applications call.
 */

/** Default of APP_CACHE_TTL_MS. */
const DEFAULT_TTL_MS = 10_000;
/** Up to three entries per application (by access key, by app key, by id): a few thousand applications. */
export const APP_CACHE_ENTRIES = 6000;

/** How long an entry lives: APP_CACHE_TTL_MS, 0 turning the cache off. */
export function appCacheTtlMs(env: { APP_CACHE_TTL_MS?: string }): number {
  const ms = env.APP_CACHE_TTL_MS ? Number(env.APP_CACHE_TTL_MS) : DEFAULT_TTL_MS;
  return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_TTL_MS;
}

type Entry<V> = { appId: string; value: V; expiresAt: number };

/** Entries of one application under several keys; a Map keeps them in the order of their last use. */
export class AppCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  /** Counts the applications forgotten, so that a read begun before a change is not kept after it. */
  #changes = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= this.now()) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Where a read of the database begins: `keep` then keeps what it read only if no application changed meanwhile. */
  mark(): number {
    return this.#changes;
  }

  keep(keys: string[], appId: string, value: V, ttlMs: number, mark: number): void {
    if (ttlMs <= 0 || mark !== this.#changes) return;
    const entry = { appId, value, expiresAt: this.now() + ttlMs };
    for (const key of keys) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.maxEntries) break;
      this.#entries.delete(oldest);
    }
  }

  /** An application changed: its entries go, and reads under way keep nothing. */
  forget(appId: string): void {
    this.#changes++;
    for (const [key, entry] of this.#entries) if (entry.appId === appId) this.#entries.delete(key);
  }
}
