import { existsSync } from 'node:fs';
import { copyFile, mkdir, open, rename, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';

/** A model on the Hugging Face hub: `owner/name` at a branch, tag or commit. */
export type HubRef = { readonly repo: string; readonly revision: string };

/** Where models come from and where they are kept (hubSettingsFromEnv). */
export type HubSettings = { readonly endpoint: string; readonly cacheDir: string; readonly token: string | undefined };

/** One repository at one revision, where its cache lies (`models--owner--name`), and how to fetch and report. */
export type HubRepo = HubRef &
  HubSettings & {
    readonly storage: string;
    readonly fetch: typeof fetch;
    readonly log: (line: string) => void;
  };

/** What the hub says of a file before its bytes: its blob's name, its size, and the URL the bytes come from. */
type FileMeta = { readonly etag: string; readonly size: number; readonly url: string };

/**
 * A request to the hub or its CDN; one that gets no answer (no network, a mirror down) throws with what was wanted
 * and where the cache is, since the cache did not hold it.
 */
export async function hubRequest(hub: HubRepo, url: string, init: RequestInit, wanted: string): Promise<Response> {
  // The token goes to the hub alone, not to the CDN its redirects lead to; identity, so sizes are the bytes'.
  const headers = new Headers(init.headers);
  headers.set('accept-encoding', 'identity');
  if (hub.token && new URL(url).origin === new URL(hub.endpoint).origin) headers.set('authorization', `Bearer ${hub.token}`);
  try {
    return await hub.fetch(url, { ...init, headers });
  } catch (error) {
    const host = url.startsWith(hub.endpoint) ? hub.endpoint : new URL(url).origin;
    const cause = error instanceof Error ? error.cause : undefined;
    const reason = cause instanceof Error ? cause.message || (cause as NodeJS.ErrnoException).code : String(error);
    throw new Error(`hf:${hub.repo}@${hub.revision}: could not reach ${host} (${reason}), and the cache ${hub.cacheDir} does not hold ${wanted}`, {
      cause: error,
    });
  }
}

/**
 * The snapshot path of one file, downloaded first unless the snapshot (or a blob of the same ETag) has it: into
 * `blobs/ETAG.incomplete`, resumed from where an earlier try stopped, then renamed to `blobs/ETAG` and linked.
 */
export async function fetchHubFile(hub: HubRepo, commit: string, name: string): Promise<string> {
  const target = path.join(hub.storage, 'snapshots', commit, ...name.split('/'));
  if (existsSync(target)) return target;
  const meta = await fileMeta(hub, commit, name);
  const blob = path.join(hub.storage, 'blobs', meta.etag);
  if (!existsSync(blob)) await download(hub, name, meta, blob);
  await mkdir(path.dirname(target), { recursive: true });
  await rm(target, { force: true }); // a link left dangling by a blob removed by hand
  try {
    await symlink(path.relative(path.dirname(target), blob), target);
  } catch {
    await copyFile(blob, target); // where links are not allowed (Windows without developer mode)
  }
  return target;
}

/**
 * A HEAD on the file, as huggingface_hub does it: relative redirects (a renamed repository) are followed, an absolute
 * one (an LFS file's CDN) is where the bytes are, and the hub's own answer gives the ETag and size.
 */
async function fileMeta(hub: HubRepo, commit: string, name: string): Promise<FileMeta> {
  let url = `${hub.endpoint}/${hub.repo}/resolve/${commit}/${name.split('/').map(encodeURIComponent).join('/')}`;
  for (let hops = 0; ; hops++) {
    const response = await hubRequest(hub, url, { method: 'HEAD', redirect: 'manual' }, name);
    const location = response.headers.get('location');
    const redirect = response.status >= 300 && response.status < 400 && location !== null;
    if (redirect && !/^([a-z][\w+.-]*:)?\/\//i.test(location) && hops < 5) {
      url = new URL(location, url).href;
      continue;
    }
    if (!response.ok && !redirect) throw new Error(`hf:${hub.repo}@${hub.revision}: ${hub.endpoint} answered HTTP ${response.status} for ${name}`);
    const etag = (response.headers.get('x-linked-etag') ?? response.headers.get('etag') ?? '').replace(/^W\//, '').replaceAll('"', '');
    const size = Number(response.headers.get('x-linked-size') ?? response.headers.get('content-length') ?? NaN);
    // The ETag names a file in blobs/: a git blob sha or an LFS sha256, nothing a path could be made of.
    if (!/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(etag) || !Number.isSafeInteger(size) || size < 0) {
      throw new Error(`hf:${hub.repo}@${hub.revision}: ${hub.endpoint} gave no usable ETag and size for ${name}`);
    }
    return { etag, size, url: redirect ? new URL(location, url).href : url };
  }
}

const megabytes = (bytes: number) => (bytes / 1e6).toFixed(1);

/** The file's bytes into `blob`, with a progress line about every second; a short file stays `.incomplete`, to resume. */
async function download(hub: HubRepo, name: string, meta: FileMeta, blob: string): Promise<void> {
  const label = `${hub.repo}@${hub.revision} ${name}`;
  const partial = `${blob}.incomplete`;
  await mkdir(path.dirname(blob), { recursive: true });
  const kept = existsSync(partial) ? (await stat(partial)).size : 0;
  const resume = kept > 0 && kept < meta.size;
  const response = await hubRequest(hub, meta.url, { headers: resume ? { range: `bytes=${kept}-` } : {} }, name);
  if (!(response.status === 200 || (resume && response.status === 206)) || !response.body) {
    throw new Error(`hf:${hub.repo}@${hub.revision}: HTTP ${response.status} downloading ${name} from ${new URL(meta.url).origin}`);
  }
  // A 206 continues the kept bytes, if it starts where they end; a 200 is the whole file again.
  if (response.status === 206 && !new RegExp(`^bytes ${kept}-`).test(response.headers.get('content-range') ?? '')) {
    await response.body.cancel();
    await rm(partial, { force: true });
    throw new Error(`hf:${hub.repo}@${hub.revision}: ${name} resumed at another offset than ${kept} (the next try starts it again)`);
  }
  let got = response.status === 206 ? kept : 0;
  const file = await open(partial, response.status === 206 ? 'a' : 'w');
  let logged = -Infinity;
  try {
    const chunks = response.body[Symbol.asyncIterator]();
    for (;;) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await chunks.next();
      } catch {
        break; // the connection broke: what came is kept, and the size check says how much
      }
      if (chunk.done) break;
      await file.write(chunk.value);
      got += chunk.value.length;
      if (performance.now() - logged >= 1000) {
        hub.log(`inference: downloading ${label} ${megabytes(got)} of ${megabytes(meta.size)} MB`);
        logged = performance.now();
      }
    }
  } finally {
    await file.close();
  }
  if (got < meta.size) throw new Error(`hf:${hub.repo}@${hub.revision}: ${name} truncated: got ${got} of ${meta.size} bytes (the next try resumes it)`);
  if (got > meta.size) throw new Error(`hf:${hub.repo}@${hub.revision}: ${name} too long: got ${got} of ${meta.size} bytes`);
  await rename(partial, blob);
  hub.log(`inference: downloaded ${label} (${megabytes(meta.size)} MB)`);
}
