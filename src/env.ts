import type { TimingVariables } from 'hono/timing';
import type { LocalVectorIndex } from './ports/vector-index/local';
import type { IngestMessage } from './ingest/message';
import type { AppRecord } from './storage/apps';
import type { RequestParams } from './http/params';
import type { FailureFields } from './http/middleware';

/** Every binding and variable of the Worker, as wrangler.toml declares them. */
export interface Env {
  DB: D1Database;
  BLOBS: R2Bucket;
  INSERT_QUEUE: Queue<IngestMessage>;
  LOCAL_VECTOR_INDEX: DurableObjectNamespace<LocalVectorIndex>;
  /** Base URL of the bundled inference service. */
  INFERENCE_URL: string;
  /** Bearer secret the inference service requires (a secret in production; `npm start` makes one per run). */
  INFERENCE_SECRET?: string;
  /** Time one inference call may take, in milliseconds, before it counts as failed (and is retried once). */
  INFERENCE_TIMEOUT_MS: string;
  /** Which detector finds objects: `service` (the inference service's own) or `workers-ai` (DETR on Workers AI). */
  DETECTOR: string;
  /** Workers AI, bound in the production environment only. */
  AI?: Ai;
  /** Which vector index adapter to use: `local` (the Durable Object) or `vectorize`. */
  VECTOR_INDEX: string;
  /** Vectorize indexes, bound in the deploy environments only. */
  VECTORIZE_IMAGES?: Vectorize;
  VECTORIZE_OBJECTS?: Vectorize;
  VECTORIZE_COLORS?: Vectorize;
  /**
   * JSON: the embedding models applications may be on, by the inference service's model id, each with its image and
   * object indexes and their dimensions (storage/embed-models.ts).
   */
  EMBED_MODELS: string;
  /** The model of EMBED_MODELS new applications are put on; an application moves to another by a reindex. */
  EMBED_MODEL: string;
  /** Fields the vector indexes filter on: `*`, or `field:string|number` pairs (`src/storage/vector-metadata.ts`). */
  VECTOR_METADATA_INDEXES: string;
  /** Namespaces each application's vectors are spread over (`src/ports/vector-index/sharded.ts`). */
  VECTOR_INDEX_SHARDS: string;
  /** Total time allowed to download an inserted image, in milliseconds. */
  IMAGE_DOWNLOAD_TIMEOUT_MS: string;
  /** `true`: image URLs on loopback may be downloaded (local development and tests); off in every deploy environment. */
  IMAGE_URL_ALLOW_LOOPBACK: string;
  /** DNS-over-HTTPS JSON endpoint image hosts are resolved with before a download; empty: no lookup. */
  IMAGE_URL_RESOLVER: string;
  /** Colours a `/colorsearch` may ask for (spec 8: 5 by default, raisable by the operator). */
  COLOR_SEARCH_MAX_COLORS: string;
  /** Bearer token of the admin API (a secret in production). */
  ADMIN_TOKEN: string;
}

/** Per-request values set by middleware. */
export interface Variables extends TimingVariables {
  reqid: string;
  /** The spec's `method` field of this endpoint's envelope. */
  method: string;
  /** What this endpoint's failed answers carry besides status, method and error. */
  failureFields: FailureFields | undefined;
  /** Whether failures are answered with their HTTP status rather than 200 (admin API, console image). */
  httpStatuses: boolean;
  /** The failure's message, for the request log; unset while the request has not failed. */
  failure: string | undefined;
  params: RequestParams;
  /** The most bytes this endpoint's body may have. */
  maxBodyBytes: number;
  app: AppRecord;
  /** What the minute's `upload_bytes_per_minute` leaves this search to download (searchQuota); Infinity without it. */
  queryBytesLeft: number;
}

export type AppEnv = { Bindings: Env; Variables: Variables };
