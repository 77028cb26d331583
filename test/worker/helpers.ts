import { createExecutionContext, createScheduledController, env, SELF, waitOnExecutionContext } from 'cloudflare:test';
import { expect } from 'vitest';
import type { Env } from '../../src/env';
import worker from '../../src/index';
import { getApp, type AppRecord } from '../../src/storage/apps';

export type Credentials = { app_id: string; access_key: string; secret_key: string; app_key: string };
export type SchemaField = { name: string; type: 'string' | 'int' | 'float' | 'text'; searchable?: boolean };

const BASE = 'https://search.test';

export const adminHeaders = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };

export const basicAuth = (credentials: Pick<Credentials, 'access_key' | 'secret_key'>): Record<string, string> => ({
  authorization: `Basic ${btoa(`${credentials.access_key}:${credentials.secret_key}`)}`,
});

export const fixtureUrl = (path: string): string => `${env.FIXTURES_URL}${path}`;

export const call = (path: string, init?: RequestInit): Promise<Response> => SELF.fetch(`${BASE}${path}`, init);

/** A fresh application (and optional schema) through the admin API, on EMBED_MODEL unless `embedModel` says. */
/** The application's id and catalog database (storage/databases.ts), as the storage functions take them. */
export async function appOf(app: Pick<Credentials, 'app_id'> | string): Promise<{ id: string; database: string }> {
  const id = typeof app === 'string' ? app : app.app_id;
  const row = await env.DB.prepare('SELECT database FROM apps WHERE id = ?').bind(id).first<{ database: string }>();
  return { id, database: row!.database };
}

/** The D1 database holding the application's catalog rows: images, transactions, versions, jobs. */
export async function catalogOf(app: Pick<Credentials, 'app_id'> | string): Promise<D1Database> {
  return databaseOf((await appOf(app)).database);
}

/** The D1_DATABASES bindings, in order. */
export const databaseNames = (): string[] => env.D1_DATABASES.split(',').map((name) => name.trim());
const databaseOf = (name: string): D1Database => (env as unknown as Record<string, D1Database>)[name]!;

/** Every D1 database of the deployment, in D1_DATABASES' order. */
export const allDatabases = (): D1Database[] => databaseNames().map(databaseOf);

/** The binding of the database holding transaction `transId` (transaction ids are unique across databases). */
export async function transactionDatabase(transId: number): Promise<string> {
  for (const name of databaseNames()) if (await databaseOf(name).prepare('SELECT 1 FROM insert_transactions WHERE id = ?').bind(transId).first()) return name;
  throw new Error(`No transaction ${transId}`);
}

/** The database holding transaction `transId`. */
export const transactionDb = async (transId: number): Promise<D1Database> => databaseOf(await transactionDatabase(transId));

/** The application's record as the Worker reads it (storage/apps.ts). */
export const appRecord = async (app: Credentials): Promise<AppRecord> => (await getApp(env.DB, app.app_id))!;

export async function createApp(name = 'test', fields: SchemaField[] = [], embedModel?: string): Promise<Credentials> {
  const created = await call('/admin/apps', { method: 'POST', headers: adminHeaders, body: JSON.stringify({ name, embed_model: embedModel }) });
  expect(created.status).toBe(201);
  const credentials = await created.json<Credentials>();
  if (fields.length > 0) await replaceSchema(credentials, fields);
  return credentials;
}

/** Replaces an application's metadata schema through the admin API. */
export async function replaceSchema(app: Pick<Credentials, 'app_id'>, fields: SchemaField[]): Promise<void> {
  const response = await call(`/admin/apps/${app.app_id}/schema`, { method: 'PUT', headers: adminHeaders, body: JSON.stringify({ fields }) });
  expect(response.status).toBe(200);
}

/** Sets an application's limits (image_limit, searches_per_minute, ...; null lifts one) through the admin API. */
export const setLimits = (app: Pick<Credentials, 'app_id'>, limits: Record<string, number | null>): Promise<Response> =>
  call(`/admin/apps/${app.app_id}`, { method: 'PATCH', headers: adminHeaders, body: JSON.stringify(limits) });

/** `POST /insert` with the spec's indexed form parameters: `{key}[i]=value`. */
export function insert(credentials: Credentials, images: Record<string, string>[]): Promise<Response> {
  const form = new URLSearchParams();
  images.forEach((image, index) => {
    for (const [key, value] of Object.entries(image)) form.append(`${key}[${index}]`, value);
  });
  return call('/insert', { method: 'POST', headers: basicAuth(credentials), body: form });
}

export type TransactionStatus = {
  processed_percent: number;
  success_count: number;
  fail_count: number;
  total: number;
  error_list: { im_name: string; error_code: number; error_message: string }[];
};

/** Polls `/insert/status` until the transaction is fully processed. */
export async function waitForTransaction(credentials: Credentials, transId: number, timeoutMs = 90_000): Promise<TransactionStatus> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await call(`/insert/status/${transId}?error_limit=100`, { headers: basicAuth(credentials) });
    expect(response.status).toBe(200);
    const [status] = (await response.json<{ result: TransactionStatus[] }>()).result;
    if (status && status.processed_percent === 100) return status;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`transaction ${transId} did not finish in ${timeoutMs} ms`);
}

/**
 * Waits (a few seconds at most) until what the application's replaced or removed versions left is deleted: a consumer
 * does that just after it settles an item, so a test that checks it must not race it. Answers what is still left.
 */
export async function retiredLeft(credentials: Pick<Credentials, 'app_id'>): Promise<number> {
  const count = async () =>
    (await (await catalogOf(credentials)).prepare('SELECT count(*) AS n FROM retired_versions WHERE app_id = ?').bind(credentials.app_id).first<{ n: number }>())!.n;
  for (let tries = 0; tries < 50 && (await count()) > 0; tries++) await new Promise((resolve) => setTimeout(resolve, 100));
  return count();
}

/** Inserts the images and waits until every one of them is settled. */
export async function insertAndWait(credentials: Credentials, images: Record<string, string>[]): Promise<TransactionStatus> {
  const response = await insert(credentials, images);
  const body = await response.json<{ status: string; trans_id: number }>();
  expect(body.status, JSON.stringify(body)).toBe('OK');
  return waitForTransaction(credentials, body.trans_id);
}

export type SearchBody = {
  status: string;
  method: string;
  error: unknown[];
  page: number;
  limit: number;
  total: number;
  result: { im_name: string; score?: number; value_map?: Record<string, string> }[];
  reqid: string;
};

/** `GET /search` (or another GET search endpoint) with Basic auth. */
export const search = async (app: Credentials, query: string, endpoint = '/search'): Promise<{ status: number; body: SearchBody }> => {
  const response = await call(`${endpoint}?${query}`, { headers: basicAuth(app) });
  return { status: response.status, body: await response.json<SearchBody>() };
};

export type ResultItem = { im_name: string; score?: number };
export type DetectedObject = { type: string; attributes: object; score: number; box: number[] };
export type UploadBody = {
  status: string;
  method: string;
  error: string[];
  page: number;
  limit: number;
  total: number;
  product_types: DetectedObject[];
  product_types_list: { type: string; attributes_list: object }[];
  result: ResultItem[];
  im_id: string;
  reqid: string;
};
export type DiscoverBody = Omit<UploadBody, 'product_types' | 'product_types_list' | 'limit' | 'total' | 'result'> & {
  result_limit: number;
  detection_limit: number;
  objects: (DetectedObject & { total: number; result: ResultItem[] })[];
  object_types_list: { type: string; attributes_list: object }[];
};

export const imageBytes = async (path: string): Promise<Blob> => new Blob([await (await fetch(fixtureUrl(path))).arrayBuffer()]);

/** A search call's multipart form: file parts for Blobs, text parts for strings, repeated for arrays. */
export function searchForm(fields: Record<string, string | string[] | Blob>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (value instanceof Blob) form.append(name, value, 'query-image');
    else for (const item of [value].flat()) form.append(name, item);
  }
  return form;
}

/** A multipart search call (`/uploadsearch`, `/discoversearch`). */
export async function post<T>(app: Credentials | null, endpoint: string, fields: Record<string, string | string[] | Blob>): Promise<{ status: number; body: T }> {
  const response = await call(endpoint, { method: 'POST', body: searchForm(fields), ...(app ? { headers: basicAuth(app) } : {}) });
  return { status: response.status, body: await response.json<T>() };
}

export const uploadsearch = (app: Credentials | null, fields: Record<string, string | string[] | Blob>) => post<UploadBody>(app, '/uploadsearch', fields);
export const discoversearch = (app: Credentials | null, fields: Record<string, string | string[] | Blob>) => post<DiscoverBody>(app, '/discoversearch', fields);
export const hits = async (path: string): Promise<number> => Number(await (await fetch(fixtureUrl(`/hits/${encodeURIComponent(path)}`))).text());

/** Runs the cron sweeper once (src/ingest/sweeper.ts), as the 10-minute trigger would, and waits for it to finish. */
export async function runSweeper(workerEnv: Env = env): Promise<void> {
  const ctx = createExecutionContext();
  worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: '*/10 * * * *' }), workerEnv, ctx);
  await waitOnExecutionContext(ctx);
}

type VectorIndexStub = ReturnType<Env['LOCAL_VECTOR_INDEX']['get']>;

/** The Worker's environment with calls of the local vector index replaced by `change`'s (given each index's own). */
export function withVectorIndex(change: (stub: VectorIndexStub) => Partial<Record<'upsert' | 'getByIds' | 'deleteByIds', (...args: never[]) => Promise<unknown>>>): Env {
  const namespace = env.LOCAL_VECTOR_INDEX;
  const changed = {
    idFromName: (name: string) => namespace.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = namespace.get(id);
      return {
        upsert: (...args: Parameters<typeof stub.upsert>) => stub.upsert(...args),
        queryMany: (...args: Parameters<typeof stub.queryMany>) => stub.queryMany(...args),
        getByIds: (ids: string[]) => stub.getByIds(ids),
        deleteByIds: (ids: string[]) => stub.deleteByIds(ids),
        ...change(stub),
      };
    },
  };
  return { ...env, LOCAL_VECTOR_INDEX: changed as unknown as Env['LOCAL_VECTOR_INDEX'] };
}

/** The messages sent to each queue through `withRecordedQueues`' env, by binding. */
export type SentMessages = Record<'INSERT_QUEUE' | 'UPDATE_QUEUE', unknown[]>;

/**
 * The Worker's environment with its two ingest queues recording every message body sent to them, then sending it on
 * to the real queue, so a test sees which queue a message went to and the message is still processed.
 */
export function withRecordedQueues(): { env: Env; sent: SentMessages } {
  const sent: SentMessages = { INSERT_QUEUE: [], UPDATE_QUEUE: [] };
  const recorded = (binding: keyof SentMessages): Queue => ({
    metrics: () => env[binding].metrics(),
    send: (body: unknown, options?: QueueSendOptions) => {
      sent[binding].push(body);
      return env[binding].send(body, options);
    },
    sendBatch: (messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions) => {
      const list = [...messages];
      sent[binding].push(...list.map((message) => message.body));
      return env[binding].sendBatch(list, options);
    },
  });
  return { env: { ...env, INSERT_QUEUE: recorded('INSERT_QUEUE'), UPDATE_QUEUE: recorded('UPDATE_QUEUE') }, sent };
}
