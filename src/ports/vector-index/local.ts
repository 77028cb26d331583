import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import { matchesFilter } from './filter';
import { checkQuery, checkRecords, VECTORIZE_LIMITS, VectorLimitError } from './limits';
import type { VectorIndex, VectorMatch, VectorMetadata, VectorQuery, VectorRecord } from './types';

type Entry = { id: string; namespace: string; values: Float32Array; norm: number; metadata: VectorMetadata | undefined };

const DEFAULT_NAMESPACE = '';

/**
 * A limit broken is answered, not thrown: an error thrown across RPC loses its class (and workerd logs it as
 * uncaught), so the adapter rethrows it as a VectorLimitError on the caller's side.
 */
type Outcome<T> = { ok: true; value: T } | { ok: false; limit: string };

function attempt<T>(operation: () => T): Outcome<T> {
  try {
    return { ok: true, value: operation() };
  } catch (error) {
    if (error instanceof VectorLimitError) return { ok: false, limit: error.message };
    throw error;
  }
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw new VectorLimitError(outcome.limit);
  return outcome.value;
}

const norm = (values: Float32Array): number => Math.sqrt(values.reduce((sum, value) => sum + value * value, 0));

/**
 * The local vector index: one Durable Object per index, vectors persisted in its SQLite storage and searched exactly
 * (cosine) from an in-memory copy. Runs in miniflare with no account and on Cloudflare alike, and enforces
 * Vectorize's limits.
 */
export class LocalVectorIndex extends DurableObject<Env> {
  #entries: Map<string, Entry> | undefined;
  /** The same entries by namespace, so a query scans only its own. */
  #namespaces = new Map<string, Map<string, Entry>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`
      CREATE TABLE IF NOT EXISTS vectors (id TEXT PRIMARY KEY, namespace TEXT NOT NULL, vector BLOB NOT NULL, metadata TEXT);
      CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    `);
  }

  get #dimensions(): number | undefined {
    const row = this.ctx.storage.sql.exec<{ value: number }>("SELECT value FROM settings WHERE key = 'dimensions'").toArray()[0];
    return row?.value;
  }

  /** Every entry, read from SQLite once per instance. */
  #loaded(): Map<string, Entry> {
    if (!this.#entries) {
      this.#entries = new Map();
      const rows = this.ctx.storage.sql.exec<{ id: string; namespace: string; vector: ArrayBuffer; metadata: string | null }>(
        'SELECT id, namespace, vector, metadata FROM vectors',
      );
      for (const row of rows) {
        const values = new Float32Array(row.vector);
        const metadata = row.metadata === null ? undefined : (JSON.parse(row.metadata) as VectorMetadata);
        this.#remember({ id: row.id, namespace: row.namespace, values, norm: norm(values), metadata });
      }
    }
    return this.#entries;
  }

  #remember(entry: Entry): void {
    this.#forget(entry.id);
    this.#loaded().set(entry.id, entry);
    const members = this.#namespaces.get(entry.namespace) ?? new Map<string, Entry>();
    members.set(entry.id, entry);
    this.#namespaces.set(entry.namespace, members);
  }

  #forget(id: string): void {
    const entry = this.#loaded().get(id);
    if (!entry) return;
    this.#loaded().delete(id);
    this.#namespaces.get(entry.namespace)?.delete(id);
  }

  upsert(records: VectorRecord[]): Outcome<void> {
    return attempt(() => this.#upsert(records));
  }

  query(vector: number[], query: VectorQuery): Outcome<VectorMatch[]> {
    return attempt(() => this.#query(vector, query));
  }

  #upsert(records: VectorRecord[]): void {
    // The first vector fixes the index's dimensions, as creating a Vectorize index does.
    const dimensions = this.#dimensions ?? records[0]?.values.length;
    checkRecords(records, dimensions);
    if (dimensions !== undefined) {
      this.ctx.storage.sql.exec("INSERT OR IGNORE INTO settings (key, value) VALUES ('dimensions', ?)", dimensions);
    }
    for (const record of records) {
      const values = Float32Array.from(record.values);
      const namespace = record.namespace ?? DEFAULT_NAMESPACE;
      this.ctx.storage.sql.exec(
        'INSERT OR REPLACE INTO vectors (id, namespace, vector, metadata) VALUES (?, ?, ?, ?)',
        record.id,
        namespace,
        values.buffer,
        record.metadata ? JSON.stringify(record.metadata) : null,
      );
      this.#remember({ id: record.id, namespace, values, norm: norm(values), metadata: record.metadata });
    }
  }

  #query(vector: number[], query: VectorQuery): VectorMatch[] {
    checkQuery(query, vector, this.#dimensions);
    const probe = Float32Array.from(vector);
    const probeNorm = norm(probe) || 1;
    const namespace = query.namespace ?? DEFAULT_NAMESPACE;
    const scored: { entry: Entry; score: number }[] = [];
    this.#loaded();
    for (const entry of this.#namespaces.get(namespace)?.values() ?? []) {
      if (query.filter && !matchesFilter(entry.metadata, query.filter)) continue;
      let dot = 0;
      for (let i = 0; i < probe.length; i++) dot += probe[i]! * entry.values[i]!;
      scored.push({ entry, score: dot / (probeNorm * (entry.norm || 1)) });
    }
    scored.sort((a, b) => b.score - a.score || (a.entry.id < b.entry.id ? -1 : 1));
    return scored.slice(0, query.topK).map(({ entry, score }) => ({
      id: entry.id,
      score,
      ...(query.returnValues ? { values: [...entry.values] } : {}),
      ...(query.returnMetadata && entry.metadata ? { metadata: entry.metadata } : {}),
    }));
  }

  getByIds(ids: string[]): VectorRecord[] {
    return ids.flatMap((id) => {
      const entry = this.#loaded().get(id);
      if (!entry) return [];
      return [{ id, namespace: entry.namespace, values: [...entry.values], ...(entry.metadata ? { metadata: entry.metadata } : {}) }];
    });
  }

  deleteByIds(ids: string[]): void {
    for (const id of ids) {
      this.ctx.storage.sql.exec('DELETE FROM vectors WHERE id = ?', id);
      this.#forget(id);
    }
  }
}

/** The port's local adapter: one named index, backed by its Durable Object. */
export function localVectorIndex(namespace: DurableObjectNamespace<LocalVectorIndex>, indexName: string): VectorIndex {
  const stub = namespace.get(namespace.idFromName(indexName));
  return {
    maxTopK: VECTORIZE_LIMITS.maxTopK,
    upsert: async (records) => unwrap(await stub.upsert(records)),
    query: async (vector, query) => unwrap(await stub.query(vector, query)),
    getByIds: async (ids) => stub.getByIds(ids),
    deleteByIds: async (ids) => {
      await stub.deleteByIds(ids);
    },
  };
}
