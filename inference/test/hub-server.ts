/**
 * For the hub tests: a stand-in for the Hugging Face hub and its CDN, two servers on 127.0.0.1, serving one tiny
 * repository as the hub does (the revision API, `resolve/` with ETag and size, LFS files by a redirect to the CDN,
 * ranges there), and recording every request. Switches break the CDN's answers on purpose.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const REPO = 'test-owner/tiny-model';
/** The repository's name before a rename: the hub redirects it to REPO by relative redirects. */
export const OLD_REPO = 'old-owner/tiny-model';
export const COMMIT = createHash('sha1').update('the only commit').digest('hex');
export const CONFIG = Buffer.from(JSON.stringify({ model_type: 'tiny', hidden_size: 8 }));
/** 300 kB in which nothing repeats, so a resume from the wrong offset shows. */
export const MODEL = Buffer.concat(Array.from({ length: 9375 }, (_, i) => createHash('sha256').update(String(i)).digest()));

/** The blobs' names: the hub's ETag of a plain file is its git blob sha, of an LFS file its sha256. */
export const CONFIG_ETAG = createHash('sha1').update(`blob ${CONFIG.length}\0`).update(CONFIG).digest('hex');
export const MODEL_ETAG = createHash('sha256').update(MODEL).digest('hex');
const TINY_REPOSITORY: Readonly<Record<string, Buffer>> = { 'config.json': CONFIG, 'onnx/model.onnx': MODEL };

/** A repository's files as the hub serves them: ONNX files by LFS (ETag: sha256), others as plain git blobs (ETag: blob sha). */
const hubFiles = (files: Readonly<Record<string, Buffer>>) =>
  new Map(
    Object.entries(files).map(([name, bytes]) => {
      const lfs = name.endsWith('.onnx');
      const etag = lfs ? createHash('sha256').update(bytes).digest('hex') : createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
      return [name, { bytes, etag, lfs }];
    }),
  );
const REVISIONS = new Map([
  ['main', COMMIT],
  ['v1.0', COMMIT],
  [COMMIT, COMMIT],
]);

export type SeenRequest = { server: 'hub' | 'cdn'; method: string; path: string; range?: string; authorization?: string };

export type FakeHub = {
  readonly endpoint: string;
  readonly requests: SeenRequest[];
  /** The CDN answers a whole 200 of only this many bytes (a file shorter than the hub announced). */
  shortAnswer?: number;
  /**
   * The CDN announces the full length, sends `bytes`, and closes the connection once `cut` settles (the client has
   * read some: bytes that arrived but were not read yet are lost with the connection).
   */
  breakAfter?: { bytes: number; cut: Promise<unknown> };
  /** Stops both servers (again: nothing). */
  close(): Promise<void>;
};

async function listen(handle: (request: IncomingMessage, response: ServerResponse) => void): Promise<Server> {
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const origin = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** The hub serving REPO with `files` (default: a tiny repository of a config and 300 kB of model bytes). */
export async function startFakeHub(files: Readonly<Record<string, Buffer>> = TINY_REPOSITORY): Promise<FakeHub> {
  const served = hubFiles(files);
  const requests: SeenRequest[] = [];
  const record = (server: SeenRequest['server'], request: IncomingMessage) =>
    requests.push({ server, method: request.method!, path: request.url!, range: request.headers.range, authorization: request.headers.authorization });

  const cdn = await listen((request, response) => {
    record('cdn', request);
    const file = [...served.values()].find(({ etag }) => request.url === `/lfs/${etag}`);
    if (!file) return void response.writeHead(404).end();
    const start = Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? '')?.[1] ?? 0);
    const body = file.bytes.subarray(start, hub.shortAnswer);
    const headers = { 'content-length': body.length, 'content-type': 'application/octet-stream' };
    if (start) response.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${file.bytes.length - 1}/${file.bytes.length}` });
    else response.writeHead(200, headers);
    if (!hub.breakAfter) return void response.end(body);
    response.write(body.subarray(0, hub.breakAfter.bytes));
    void hub.breakAfter.cut.then(() => response.destroy());
  });

  const server = await listen((request, response) => {
    record('hub', request);
    const url = new URL(request.url!, 'http://hub');
    if (url.pathname.includes(`/${OLD_REPO}/`)) return void response.writeHead(307, { location: url.pathname.replace(OLD_REPO, REPO) }).end();
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
    if (api) {
      const commit = api[1] === REPO ? REVISIONS.get(decodeURIComponent(api[2]!)) : undefined;
      if (!commit) return void response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Repository not found"}');
      const siblings = [...served.keys()].map((rfilename) => ({ rfilename }));
      return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: REPO, sha: commit, siblings }));
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const file = resolve?.[1] === REPO && REVISIONS.has(resolve[2]!) ? served.get(decodeURIComponent(resolve[3]!)) : undefined;
    if (!file) return void response.writeHead(404).end();
    if (file.lfs) {
      // As the hub: the redirect's own ETag and length are the pointer's; the file's are in the X-Linked headers.
      return void response
        .writeHead(302, {
          location: `${origin(cdn)}/lfs/${file.etag}`,
          etag: '"pointer-etag"',
          'x-linked-etag': `"${file.etag}"`,
          'x-linked-size': file.bytes.length,
          'x-repo-commit': COMMIT,
          'content-length': 0,
        })
        .end();
    }
    response.writeHead(200, { etag: `"${file.etag}"`, 'content-length': file.bytes.length, 'x-repo-commit': COMMIT });
    response.end(request.method === 'HEAD' ? undefined : file.bytes);
  });

  const hub: FakeHub = {
    endpoint: origin(server),
    requests,
    close: async () => {
      for (const each of [server, cdn].filter((one) => one.listening)) {
        each.closeAllConnections();
        each.close();
        await once(each, 'close');
      }
    },
  };
  return hub;
}

/** An endpoint where nothing listens: a port just freed. */
export async function unreachableEndpoint(): Promise<string> {
  const server = await listen(() => {});
  const endpoint = origin(server);
  server.close();
  await once(server, 'close');
  return endpoint;
}
