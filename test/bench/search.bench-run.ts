import { env } from 'cloudflare:test';
import { inject, it } from 'vitest';
import { inference } from '../../src/ports/inference';
import { embedModelNumber, registerEmbedModel } from '../../src/storage/model-numbers';
import { DATABASE_SLOTS } from '../../src/storage/sequence';
import { imageVectors } from '../../src/storage/vectors';
import { latencyOf, type Latency } from '../../scripts/lib/latency';
import { appOf, basicAuth, call, catalogOf, createApp, databaseNames, imageBytes, uploadsearch, type Credentials } from '../worker/helpers';

/**
 * `npm run bench`, search latency: fills one application with synthetic images (D1 rows, random unit vectors through
 * the sharded local index as the consumer writes them) up to each size in turn, then
 * times `/search` and `/uploadsearch` through the Worker's routes, requests one at a time. Not part of `npm test`.
 */

const SEARCHES = 200;
const UPLOADS = 60;
const WARM_UP = 5;
const FILL_CHUNK = 1000;
/** A photo in which the detector finds nothing, so the upload search is the whole-image query. */
const QUERY_IMAGE = '/images/skimage_chelsea.jpg';

function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const next = random(7);
function unitVector(dimensions: number): number[] {
  const values = Array.from({ length: dimensions }, () => next() - 0.5);
  const norm = Math.hypot(...values);
  return values.map((value) => value / norm);
}

const imName = (i: number): string => `synthetic-${i}`;

/**
 * Adds images `from` to `to - 1`: rows as an applied insert writes them, in the application's catalog database, with
 * ids from that database's allocator (migrations/0008; storage/sequence.ts: its count times DATABASE_SLOTS plus its
 * position), in a few statements per chunk (an insert itself takes about 2.5 ms an image here, minutes for 100k), and
 * their vectors through the index port.
 */
async function fill(appId: string, dimensions: number, from: number, to: number): Promise<void> {
  const db = await catalogOf(appId);
  const position = databaseNames().indexOf((await appOf(appId)).database);
  for (let start = from; start < to; start += FILL_CHUNK) {
    const names = Array.from({ length: Math.min(FILL_CHUNK, to - start) }, (_, k) => imName(start + k));
    const now = Date.now();
    const [allocated] = await db.batch<{ id: number }>([
      db.prepare('INSERT INTO image_ids (id) SELECT NULL FROM json_each(?) WHERE true RETURNING id').bind(JSON.stringify(names)),
      db.prepare('DELETE FROM image_ids'),
    ]);
    const rows = names.map((name, k) => [allocated!.results[k]!.id * DATABASE_SLOTS + position, name]);
    await db.batch([
      registerEmbedModel(db, env.EMBED_MODEL),
      db.prepare(
        `INSERT INTO images (id, app_id, im_name, im_url, blob_key, format, width, height, metadata, object_count, colors, model, created_at, updated_at)
         SELECT json_extract(value, '$[0]'), ?1, json_extract(value, '$[1]'), 'https://example.com/' || json_extract(value, '$[1]') || '.jpg',
           ?1 || '/' || json_extract(value, '$[1]'),
           'jpeg', 640, 480, '{}', 0, '', ${embedModelNumber('?4')}, ?2, ?2
         FROM json_each(?3)`,
      ).bind(appId, now, JSON.stringify(rows), env.EMBED_MODEL),
    ]);
    await imageVectors(env, env.EMBED_MODEL).upsert(rows.map(([id]) => ({ id: String(id), namespace: appId, values: unitVector(dimensions), metadata: {} })));
  }
}

/** Times `request` `times` times, one after another, after a warm-up; each answer must be a full page. */
async function latency(times: number, request: (i: number) => Promise<{ status: number; total: number }>): Promise<Latency> {
  for (let i = 0; i < WARM_UP; i++) await request(i);
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    const { status, total } = await request(i);
    samples.push(performance.now() - started);
    if (status !== 200 || total === 0) throw new Error(`request ${i} answered ${status} with ${total} results`);
  }
  return latencyOf(samples);
}

const searchByName = (app: Credentials, size: number) => async (i: number) => {
  // A different stored image each time, spread over the collection.
  const response = await call(`/search?im_name=${imName((i * 7919) % size)}`, { headers: basicAuth(app) });
  return { status: response.status, total: (await response.json<{ total?: number }>()).total ?? 0 };
};

it('search latency by collection size', async () => {
  const app = await createApp('bench');
  const query = await imageBytes(QUERY_IMAGE);
  // Synthetic vectors take the real embedding's length, whichever model the service runs.
  const dimensions = (await inference(env).predict(new Uint8Array(await query.arrayBuffer()), ['embed'])).embed.vector.length;
  const upload = async () => {
    const { status, body } = await uploadsearch(app, { image: query });
    return { status, total: body.total ?? 0 };
  };
  const results = [];
  let filled = 0;
  for (const size of inject('benchSizes')) {
    const started = performance.now();
    await fill(app.app_id, dimensions, filled, size);
    const fillSeconds = (performance.now() - started) / 1000;
    filled = size;
    results.push({ size, fillSeconds, search: await latency(SEARCHES, searchByName(app, size)), uploadsearch: await latency(UPLOADS, upload) });
    console.log(JSON.stringify(results.at(-1)));
  }
  const posted = await fetch(inject('benchResultsUrl'), { method: 'POST', body: JSON.stringify({ queryImage: QUERY_IMAGE, dimensions, results }) });
  if (!posted.ok) throw new Error(`could not hand over the results: ${posted.status}`);
});
