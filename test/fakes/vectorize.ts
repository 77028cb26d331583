import { matchesFilter } from '../../src/ports/vector-index/filter';
import { checkQuery, checkRecords, VectorLimitError } from '../../src/ports/vector-index/limits';
import type { VectorFilter, VectorMetadata } from '../../src/ports/vector-index/types';
import type { VectorizeBinding } from '../../src/ports/vector-index/vectorize';
import { VECTORIZE_LIMITS } from '../../src/vectorize-limits';

type Stored = { id: string; values: number[]; namespace: string | undefined; metadata: VectorMetadata | undefined };
type Mutation = { visibleAt: number; apply(store: Map<string, Stored>): void };

/**
 * An in-test stand-in for a Vectorize index (there is no local simulator). It behaves as the documented service
 * does where our code depends on it: writes become visible only after `delayMs`; topK is capped at 100 (20 with
 * values or metadata); filters are AND-only objects of the documented operators, at most 2 KB, and match only
 * fields with a metadata index (at most 10), like vectors written before their index existed; getByIds takes at
 * most 20 ids; cosine scores; an index holds at most 10 million vectors in at most 50,000 namespaces, and describe()
 * counts the vectors applied.
 */
export class FakeVectorize implements VectorizeBinding {
  readonly #store = new Map<string, Stored>();
  readonly #pending: Mutation[] = [];
  readonly #delayMs: number;
  readonly #indexed: Set<string>;
  readonly #dimensions: number;
  calls = { upsert: 0, query: 0, getByIds: 0, deleteByIds: 0 };

  constructor(options: { dimensions: number; delayMs: number; metadataIndexes?: string[] }) {
    if ((options.metadataIndexes?.length ?? 0) > 10) throw new VectorLimitError('at most 10 metadata indexes');
    this.#dimensions = options.dimensions;
    this.#delayMs = options.delayMs;
    this.#indexed = new Set(options.metadataIndexes ?? []);
  }

  #settle(): void {
    const now = Date.now();
    while (this.#pending[0] && this.#pending[0].visibleAt <= now) this.#pending.shift()!.apply(this.#store);
  }

  #mutate(apply: Mutation['apply']): Promise<VectorizeAsyncMutation> {
    this.#pending.push({ visibleAt: Date.now() + this.#delayMs, apply });
    return Promise.resolve({ mutationId: crypto.randomUUID() });
  }

  upsert(vectors: VectorizeVector[]): Promise<VectorizeAsyncMutation> {
    this.calls.upsert++;
    const records = vectors.map((vector) => ({ id: vector.id, values: [...vector.values], namespace: vector.namespace, metadata: vector.metadata as VectorMetadata | undefined }));
    checkRecords(records.map(({ namespace, metadata, ...rest }) => ({ ...rest, ...(namespace ? { namespace } : {}), ...(metadata ? { metadata } : {}) })), this.#dimensions);
    this.#settle();
    const namespaces = new Set([...this.#store.values()].map((stored) => stored.namespace));
    records.forEach((record) => namespaces.add(record.namespace));
    if (namespaces.size > VECTORIZE_LIMITS.maxNamespacesPerIndex) throw new VectorLimitError(`an index holds at most ${VECTORIZE_LIMITS.maxNamespacesPerIndex} namespaces`);
    const added = new Set(records.map((record) => record.id).filter((id) => !this.#store.has(id)));
    if (this.#store.size + added.size > VECTORIZE_LIMITS.maxVectorsPerIndex) throw new VectorLimitError(`an index holds at most ${VECTORIZE_LIMITS.maxVectorsPerIndex} vectors`);
    return this.#mutate((store) => records.forEach((record) => store.set(record.id, record)));
  }

  async describe(): Promise<VectorizeIndexInfo> {
    this.#settle();
    return { vectorCount: this.#store.size, dimensions: this.#dimensions, processedUpToDatetime: Date.now(), processedUpToMutation: 0 };
  }

  deleteByIds(ids: string[]): Promise<VectorizeAsyncMutation> {
    this.calls.deleteByIds++;
    return this.#mutate((store) => ids.forEach((id) => store.delete(id)));
  }

  async getByIds(ids: string[]): Promise<VectorizeVector[]> {
    this.calls.getByIds++;
    if (ids.length > 20) throw new VectorLimitError('getByIds takes at most 20 ids');
    this.#settle();
    return ids.flatMap((id) => {
      const stored = this.#store.get(id);
      return stored ? [{ id, values: stored.values, ...(stored.namespace ? { namespace: stored.namespace } : {}), ...(stored.metadata ? { metadata: stored.metadata } : {}) }] : [];
    });
  }

  async query(vector: VectorFloatArray | number[], options: VectorizeQueryOptions = {}): Promise<VectorizeMatches> {
    this.calls.query++;
    const values = [...vector];
    const filter = options.filter as VectorFilter | undefined;
    checkQuery(
      {
        topK: options.topK ?? 5,
        ...(options.namespace ? { namespace: options.namespace } : {}),
        ...(filter ? { filter } : {}),
        returnValues: options.returnValues ?? false,
        returnMetadata: options.returnMetadata === 'all' || options.returnMetadata === true,
      },
      values,
      this.#dimensions,
    );
    this.#settle();
    const norm = (v: number[]): number => Math.hypot(...v) || 1;
    const matches = [...this.#store.values()]
      .filter((stored) => stored.namespace === options.namespace)
      .filter((stored) => !filter || (Object.keys(filter).every((field) => this.#indexed.has(field)) && matchesFilter(stored.metadata, filter)))
      .map((stored) => ({ stored, score: stored.values.reduce((sum, value, i) => sum + value * values[i]!, 0) / (norm(stored.values) * norm(values)) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, options.topK ?? 5)
      .map(({ stored, score }) => ({
        id: stored.id,
        score,
        ...(stored.namespace ? { namespace: stored.namespace } : {}),
        ...(options.returnValues ? { values: stored.values } : {}),
        ...(options.returnMetadata === 'all' && stored.metadata ? { metadata: stored.metadata } : {}),
      }));
    return { matches, count: matches.length };
  }
}
