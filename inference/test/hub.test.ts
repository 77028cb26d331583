/**
 * Models from the Hugging Face hub (src/models/hub/): references, settings, and downloads into huggingface_hub's
 * cache layout from a stand-in hub on 127.0.0.1 (hub-server.ts): progress, offline starts, tags, unknown
 * repositories, truncated files, resumed downloads, an unreachable endpoint.
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { HubSettings } from '../src/models/hub/hub-file.ts';
import { DEFAULT_HUB_CACHE, hubModelFiles, hubSettingsFromEnv, parseHubRef } from '../src/models/hub/hub.ts';
import { COMMIT, CONFIG, CONFIG_ETAG, MODEL, MODEL_ETAG, OLD_REPO, REPO, startFakeHub, unreachableEndpoint, type FakeHub } from './hub-server.ts';

const MODEL_FILE = 'onnx/model.onnx';
const MAIN = { repo: REPO, revision: 'main' };
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const noRequest: typeof fetch = async (input) => assert.fail(`no request expected, got ${String(input)}`);

describe('parseHubRef', () => {
  test('owner/repo, at a revision or main', () => {
    assert.deepEqual(parseHubRef('hf:Xenova/clip-vit-base-patch32'), { repo: 'Xenova/clip-vit-base-patch32', revision: 'main' });
    assert.deepEqual(parseHubRef('hf:Xenova/clip-vit-base-patch32@v1.0'), { repo: 'Xenova/clip-vit-base-patch32', revision: 'v1.0' });
    assert.deepEqual(parseHubRef(`hf:a_b/c.d@${COMMIT}`), { repo: 'a_b/c.d', revision: COMMIT });
    assert.deepEqual(parseHubRef('hf:owner/repo@refs/pr/1'), { repo: 'owner/repo', revision: 'refs/pr/1' });
  });

  test('refuses anything else, naming the entry and the expected form', () => {
    const malformed = ['Xenova/clip', 'hf:clip', 'hf:a/b/c', 'hf:owner/repo@', 'hf:owner/-repo', 'hf:own--er/repo', 'hf:owner/re..po', 'hf:o/r@../x', 'hf:o/r@a b'];
    for (const text of malformed) {
      assert.throws(() => parseHubRef(text), { message: `"${text}" is not a hub model: expected hf:<owner>/<repo> or hf:<owner>/<repo>@<revision>` });
    }
  });
});

describe('hubSettingsFromEnv', () => {
  test('huggingface.co and <repo root>/.local/huggingface/hub by default', () => {
    assert.deepEqual(hubSettingsFromEnv({}), { endpoint: 'https://huggingface.co', cacheDir: DEFAULT_HUB_CACHE, token: undefined });
    assert.equal(DEFAULT_HUB_CACHE, path.resolve(import.meta.dirname, '../../.local/huggingface/hub'));
  });

  test('HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN', () => {
    assert.deepEqual(hubSettingsFromEnv({ HF_ENDPOINT: 'http://127.0.0.1:9/mirror/', HF_HOME: '/srv/hf', HF_TOKEN: 'hf_x' }), {
      endpoint: 'http://127.0.0.1:9/mirror',
      cacheDir: path.resolve('/srv/hf/hub'),
      token: 'hf_x',
    });
    assert.equal(hubSettingsFromEnv({ HF_HOME: '/srv/hf', HF_HUB_CACHE: '/srv/cache' }).cacheDir, path.resolve('/srv/cache'));
    assert.throws(() => hubSettingsFromEnv({ HF_ENDPOINT: 'huggingface.co' }), { message: 'HF_ENDPOINT must be an http(s) URL, got "huggingface.co"' });
  });
});

describe('hubModelFiles', () => {
  let hub: FakeHub;
  let settings: HubSettings;
  let lines: string[];
  const log = (line: string) => void lines.push(line);
  const storage = (...parts: string[]) => path.join(settings.cacheDir, `models--${REPO.replace('/', '--')}`, ...parts);
  const cdnRequests = () => hub.requests.filter((request) => request.server === 'cdn');

  beforeEach(async () => {
    hub = await startFakeHub();
    settings = { endpoint: hub.endpoint, cacheDir: mkdtempSync(path.join(tmpdir(), 'hub-test-')), token: undefined };
    lines = [];
  });
  afterEach(async () => {
    await hub.close();
    rmSync(settings.cacheDir, { recursive: true, force: true });
  });

  test("downloads into huggingface_hub's cache layout, with progress; a later start loads it with no request", async () => {
    const files = await hubModelFiles(MAIN, { ...settings, token: 'hf_secret' }, { log });
    assert.equal(files.source, `hf:${REPO}@${COMMIT}`);
    assert.deepEqual(files.names, ['config.json', MODEL_FILE]);
    // Asked twice at once: downloaded once.
    const [model, again] = await Promise.all([files.localPath(MODEL_FILE), files.localPath(MODEL_FILE)]);
    const config = await files.localPath('config.json');
    assert.equal(again, model);
    assert.equal(cdnRequests().length, 1);
    assert.deepEqual(readFileSync(model), MODEL);
    assert.deepEqual(readFileSync(config), CONFIG);

    // refs/main holds the commit; the snapshot's files are relative links to blobs named by ETag (LFS: X-Linked-Etag).
    assert.equal(readFileSync(storage('refs', 'main'), 'utf8'), COMMIT);
    assert.equal(model, storage('snapshots', COMMIT, 'onnx', 'model.onnx'));
    assert.equal(config, storage('snapshots', COMMIT, 'config.json'));
    assert.ok(lstatSync(model).isSymbolicLink());
    assert.equal(readlinkSync(model), `../../../blobs/${MODEL_ETAG}`);
    assert.equal(readlinkSync(config), `../../blobs/${CONFIG_ETAG}`);
    assert.ok(!existsSync(storage('blobs', `${MODEL_ETAG}.incomplete`)));

    assert.match(lines[0]!, new RegExp(`^inference: downloading ${escape(`${REPO}@main ${MODEL_FILE}`)} \\d\\.\\d of 0\\.3 MB$`));
    assert.ok(lines.includes(`inference: downloaded ${REPO}@main ${MODEL_FILE} (0.3 MB)`), lines.join('\n'));
    // The token went to the hub, not to the CDN.
    for (const request of hub.requests) assert.equal(request.authorization, request.server === 'hub' ? 'Bearer hf_secret' : undefined, request.path);

    await hub.close();
    const offline = await hubModelFiles(MAIN, settings, { log, fetch: noRequest });
    assert.equal(offline.source, `hf:${REPO}@${COMMIT}`);
    assert.deepEqual(offline.names, files.names);
    assert.deepEqual(readFileSync(await offline.localPath(MODEL_FILE)), MODEL);
    assert.deepEqual(readFileSync(await offline.localPath('config.json')), CONFIG);
    await assert.rejects(offline.localPath('model.safetensors'), { message: `hf:${REPO}@main has no model.safetensors` });
    // The commit itself needs no ref.
    const byCommit = await hubModelFiles({ repo: REPO, revision: COMMIT }, settings, { log, fetch: noRequest });
    assert.deepEqual(readFileSync(await byCommit.localPath(MODEL_FILE)), MODEL);
  });

  test('a tag resolves to its commit, kept in refs/', async () => {
    const files = await hubModelFiles({ repo: REPO, revision: 'v1.0' }, settings, { log });
    assert.equal(files.source, `hf:${REPO}@${COMMIT}`);
    assert.equal(readFileSync(storage('refs', 'v1.0'), 'utf8'), COMMIT);
    assert.ok(!existsSync(storage('refs', 'main')));
    assert.deepEqual(readFileSync(await files.localPath('config.json')), CONFIG);
    assert.deepEqual(hub.requests[0], { server: 'hub', method: 'GET', path: `/api/models/${REPO}/revision/v1.0`, range: undefined, authorization: undefined });
  });

  test("a renamed repository: the hub's relative redirects are followed, the cache keeps the name asked for", async () => {
    const files = await hubModelFiles({ repo: OLD_REPO, revision: 'main' }, settings, { log });
    assert.deepEqual(readFileSync(await files.localPath(MODEL_FILE)), MODEL);
    assert.deepEqual(readFileSync(await files.localPath('config.json')), CONFIG);
    assert.equal(readlinkSync(path.join(settings.cacheDir, 'models--old-owner--tiny-model', 'snapshots', COMMIT, MODEL_FILE)), `../../../blobs/${MODEL_ETAG}`);
    assert.deepEqual(
      hub.requests.map(({ method, path }) => `${method} ${path}`),
      [
        `GET /api/models/${OLD_REPO}/revision/main`,
        `GET /api/models/${REPO}/revision/main`,
        `HEAD /${OLD_REPO}/resolve/${COMMIT}/onnx/model.onnx`,
        `HEAD /${REPO}/resolve/${COMMIT}/onnx/model.onnx`,
        `GET /lfs/${MODEL_ETAG}`,
        `HEAD /${OLD_REPO}/resolve/${COMMIT}/config.json`,
        `HEAD /${REPO}/resolve/${COMMIT}/config.json`,
        `GET /${REPO}/resolve/${COMMIT}/config.json`,
      ],
    );
  });

  test('an unknown repository or revision: the error names it and the endpoint', async () => {
    const hint = 'or a private or gated one needs HF_TOKEN (HTTP 404)';
    await assert.rejects(hubModelFiles({ repo: 'test-owner/nothing', revision: 'main' }, settings, { log }), {
      message: `hf:test-owner/nothing@main: ${hub.endpoint} has no such repository or revision, ${hint}`,
    });
    await assert.rejects(hubModelFiles({ repo: REPO, revision: 'v9' }, settings, { log }), {
      message: `hf:${REPO}@v9: ${hub.endpoint} has no such repository or revision, ${hint}`,
    });
    assert.ok(!existsSync(storage()));
  });

  test('a file shorter than announced is refused, naming it, and not linked into the snapshot', async () => {
    hub.shortAnswer = 1000;
    const files = await hubModelFiles(MAIN, settings, { log });
    await assert.rejects(files.localPath(MODEL_FILE), { message: `hf:${REPO}@main: ${MODEL_FILE} truncated: got 1000 of 300000 bytes (the next try resumes it)` });
    assert.ok(!existsSync(storage('snapshots', COMMIT, 'onnx')));
    assert.ok(!existsSync(storage('blobs', MODEL_ETAG)));
  });

  test('a download cut midway stays .incomplete, and the next try asks for the rest', async () => {
    let someRead = () => {};
    hub.breakAfter = { bytes: 100_000, cut: new Promise<void>((resolve) => (someRead = resolve)) };
    const files = await hubModelFiles(MAIN, settings, { log: (line) => (log(line), someRead()) });
    const error = await files.localPath(MODEL_FILE).then(assert.fail, (error: Error) => error);
    const kept = statSync(storage('blobs', `${MODEL_ETAG}.incomplete`)).size;
    assert.ok(kept > 0 && kept <= 100_000, String(kept));
    assert.equal(error.message, `hf:${REPO}@main: ${MODEL_FILE} truncated: got ${kept} of 300000 bytes (the next try resumes it)`);
    assert.ok(!existsSync(storage('snapshots', COMMIT, 'onnx')));

    hub.breakAfter = undefined;
    assert.deepEqual(readFileSync(await files.localPath(MODEL_FILE)), MODEL);
    assert.deepEqual(
      cdnRequests().map((request) => request.range),
      [undefined, `bytes=${kept}-`],
    );
    assert.ok(!existsSync(storage('blobs', `${MODEL_ETAG}.incomplete`)));
  });

  test('an unreachable endpoint: the error says so, and what the cache lacks', async () => {
    const endpoint = await unreachableEndpoint();
    const reason = '\\(connect ECONNREFUSED [^)]+\\)';
    const unreachable = (wanted: string) =>
      new RegExp(`^hf:${escape(REPO)}@main: could not reach ${escape(endpoint)} ${reason}, and the cache ${escape(settings.cacheDir)} does not hold ${escape(wanted)}$`);
    await assert.rejects(hubModelFiles(MAIN, { ...settings, endpoint }, { log }), { message: unreachable('the file list') });

    // The list cached, not the file.
    await hubModelFiles(MAIN, settings, { log });
    const files = await hubModelFiles(MAIN, { ...settings, endpoint }, { log });
    await assert.rejects(files.localPath(MODEL_FILE), { message: unreachable(MODEL_FILE) });
  });
});
