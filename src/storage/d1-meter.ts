import type { Env } from '../env';
import type { VectorIndex } from '../ports/vector-index/types';
import { CONTROL_DATABASE, databaseNames } from './databases';

/**
 * A request's round trips to D1 and to the vector index, counted and timed for its `Server-Timing` (README, Deploy):
 * every `first`, `all`, `run` or `raw` of a statement, every `batch` and every `exec` is one round trip to D1, and
 * every call of the vector index port one to the index. A D1 round trip is `d1-replica` when it went through a
 * session that may read a replica (reads `near`) and only reads; every other one is `d1-primary`. Locally,
 * D1_SIMULATED_PRIMARY_MS and D1_SIMULATED_REPLICA_MS delay each by the distance they simulate.
 */
export type RoundTripKind = 'd1-primary' | 'd1-replica' | 'vector-index';

/** Where a request's D1 reads go: the primary, or a session that may read a replica near the Worker. */
export type Reads = 'primary' | 'near';

export type RoundTripTally = { kind: RoundTripKind; count: number; ms: number };

/** The simulated distance to the primary and to a replica, in milliseconds; 0 when unset. */
const simulatedMs = (value: string | undefined): number => Math.max(0, Number(value ?? 0) || 0);

/** A statement that only reads: SELECT, or WITH not leading to a write. Anything else may write, so it goes to the primary. */
const READ = /^\s*(SELECT|WITH)\b/i;
const WRITE = /\b(INSERT|UPDATE|DELETE)\b|\bREPLACE\s+INTO\b/i;
const onlyReads = (sql: string): boolean => READ.test(sql) && !WRITE.test(sql.replace(/'(?:[^']|'')*'/g, "''"));

/** Where a request's round trips are counted; its env copy carries it under this key (env spreads keep it). */
const METER = Symbol('round trips');
type MeteredEnv = Env & { [METER]?: RoundTripMeter };

type Sends = { prepare(query: string): D1PreparedStatement; batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> };
type RoundTrip = <T>(sqls: string[], send: () => Promise<T>) => Promise<T>;

/** A statement whose every execution is one round trip; `inner` is what the binding (or its session) prepared. */
class MeteredStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    private readonly roundTrip: RoundTrip,
  ) {}

  bind(...values: unknown[]): D1PreparedStatement {
    return new MeteredStatement(this.inner.bind(...values), this.sql, this.roundTrip) as unknown as D1PreparedStatement;
  }
  first<T>(column?: string): Promise<T | null> {
    return this.roundTrip([this.sql], () => (column === undefined ? this.inner.first<T>() : this.inner.first<T>(column)));
  }
  run<T>(): Promise<D1Result<T>> {
    return this.roundTrip([this.sql], () => this.inner.run<T>());
  }
  all<T>(): Promise<D1Result<T>> {
    return this.roundTrip([this.sql], () => this.inner.all<T>());
  }
  raw(options?: { columnNames?: boolean }): Promise<unknown> {
    return this.roundTrip([this.sql], () => this.inner.raw(options as { columnNames: true }));
  }
}

/** The count and time of one kind of round trip in a request. */
class Tally {
  count = 0;
  ms = 0;
}

/** One request's round trips (its Server-Timing entries), and its env copies whose D1 and vector index count them. */
export class RoundTripMeter {
  readonly #tallies = new Map<RoundTripKind, Tally>([
    ['d1-primary', new Tally()],
    ['d1-replica', new Tally()],
    ['vector-index', new Tally()],
  ]);
  readonly #delayMs: Record<RoundTripKind, number>;

  /** `env`: the Worker's own, whose bindings the copies wrap. */
  constructor(private readonly env: Env) {
    this.#delayMs = { 'd1-primary': simulatedMs(env.D1_SIMULATED_PRIMARY_MS), 'd1-replica': simulatedMs(env.D1_SIMULATED_REPLICA_MS), 'vector-index': 0 };
  }

  /**
   * A copy of the env whose databases (each D1_DATABASES lists) read as `reads` says, and whose round trips (D1 and
   * vector index) this meter counts.
   */
  envReading(reads: Reads): Env {
    const databases = Object.fromEntries(databaseNames(this.env).map((name) => [name, this.#database(name, reads)]));
    return { ...this.env, ...databases, [METER]: this } as MeteredEnv;
  }

  /** Each kind's count and summed time, all three even at zero. */
  tallies(): RoundTripTally[] {
    return [...this.#tallies].map(([kind, { count, ms }]) => ({ kind, count, ms }));
  }

  /** Counts and times one round trip of `kind`, after the simulated distance. */
  async count<T>(kind: RoundTripKind, send: () => Promise<T>): Promise<T> {
    const tally = this.#tallies.get(kind)!;
    const started = performance.now();
    try {
      if (this.#delayMs[kind] > 0) await scheduler.wait(this.#delayMs[kind]);
      return await send();
    } finally {
      tally.count += 1;
      tally.ms += performance.now() - started;
    }
  }

  /** The index with each call counted as one round trip. */
  vectorIndex(index: VectorIndex): VectorIndex {
    return {
      maxTopK: index.maxTopK,
      upsert: (records) => this.count('vector-index', () => index.upsert(records)),
      query: (vector, query) => this.count('vector-index', () => index.query(vector, query)),
      getByIds: (ids) => this.count('vector-index', () => index.getByIds(ids)),
      deleteByIds: (ids) => this.count('vector-index', () => index.deleteByIds(ids)),
      countVectors: () => this.count('vector-index', () => index.countVectors()),
    };
  }

  /** A round trip through `reads`: one of only reads through a session that may read a replica is the replica's. */
  #roundTrip(reads: Reads): RoundTrip {
    return (sqls, send) => this.count(reads === 'near' && sqls.every(onlyReads) ? 'd1-replica' : 'd1-primary', send);
  }

  /** `sends` (the binding or a session of it) with its statements and batches counted. */
  #sending(sends: Sends, reads: Reads): Sends {
    const roundTrip = this.#roundTrip(reads);
    return {
      prepare: (sql) => new MeteredStatement(sends.prepare(sql), sql, roundTrip) as unknown as D1PreparedStatement,
      batch: <T>(statements: D1PreparedStatement[]) => {
        // A statement prepared elsewhere (not metered) is sent as it is and counted as a write.
        const metered = statements.map((statement) => (statement instanceof MeteredStatement ? statement : undefined));
        const sqls = metered.map((statement) => statement?.sql ?? 'unknown');
        return roundTrip(sqls, () => sends.batch<T>(statements.map((statement, k) => metered[k]?.inner ?? statement)));
      },
    };
  }

  /** The binding `name`, or (`near`) it behind a session that may read a replica (D1's Sessions API, `first-unconstrained`). */
  #database(name: string, reads: Reads): D1Database {
    const db = (this.env as unknown as Record<string, D1Database>)[name]!;
    return this.#withPrimaryOnly(db, this.#sending(reads === 'near' ? db.withSession('first-unconstrained') : db, reads));
  }

  /** What only the binding does (a session has no `exec`, `dump` nor sessions of its own): on the primary. */
  #withPrimaryOnly(db: D1Database, sends: Sends): D1Database {
    const database = {
      ...sends,
      exec: (query: string) => this.count('d1-primary', () => db.exec(query)),
      dump: () => this.count('d1-primary', () => db.dump()),
      withSession: (constraintOrBookmark?: string) => {
        const session = db.withSession(constraintOrBookmark);
        return { ...this.#sending(session, constraintOrBookmark === 'first-unconstrained' ? 'near' : 'primary'), getBookmark: () => session.getBookmark() };
      },
    };
    return database as unknown as D1Database;
  }
}

/** The meter whose env copy this is; none outside a request (the queue consumer, the sweeper). */
export const roundTripMeterOf = (env: Env): RoundTripMeter | undefined => (env as MeteredEnv)[METER];

/** The env's database `name` (the control one unless said) on the primary, which has every write, even where the env reads near. */
export const primaryDatabase = (env: Env, name = CONTROL_DATABASE): D1Database =>
  ((roundTripMeterOf(env)?.envReading('primary') ?? env) as unknown as Record<string, D1Database>)[name]!;
