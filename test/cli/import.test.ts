import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { adminRequest } from '../../scripts/lib/admin-client.ts';
import { startLocalStack, type LocalStack } from '../../scripts/lib/local-stack.ts';
import { stackLogOf } from '../support/test-log.ts';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';

/**
 * `npm run import` against the local stack (fresh state, free ports): a folder, a CSV with bad rows, a second run
 * that skips what is done, and a run killed after sending that the next run follows to the end.
 */

const STATE_DIR = path.join(ROOT, '.wrangler/import-test-state');
const WORK_DIR = path.join(ROOT, '.local/import-test');
const ADMIN_TOKEN = 'import-test-admin-token';
const IMPORT = path.join(ROOT, 'scripts/import.ts');
const NODE = path.join(ROOT, 'node_modules/.bin/node');

let stack: LocalStack;
let keys: { access_key: string; secret_key: string };

/** A folder of links to some shared images. */
function folderOf(name: string, files: string[]): string {
  const folder = path.join(WORK_DIR, name);
  mkdirSync(folder, { recursive: true });
  for (const file of files) symlinkSync(path.join(IMAGES_DIR, file), path.join(folder, file));
  return folder;
}

type Run = { code: number | null; output: string };

/** Runs the import command; `stopWhen` kills it (SIGKILL) as soon as it holds. */
function runImport(source: string, stopWhen?: () => boolean): Promise<Run> {
  const child = spawn(NODE, [IMPORT, source], {
    env: { ...process.env, API_URL: stack.baseUrl, ACCESS_KEY: keys.access_key, SECRET_KEY: keys.secret_key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const watch = stopWhen && setInterval(() => stopWhen() && child.kill('SIGKILL'), 20);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      if (watch) clearInterval(watch);
      resolve({ code, output });
    }),
  );
}

const searchable = async (name: string): Promise<boolean> => {
  const auth = `Basic ${Buffer.from(`${keys.access_key}:${keys.secret_key}`).toString('base64')}`;
  const response = await fetch(`${stack.baseUrl}/search?im_name=${name}`, { headers: { authorization: auth } });
  // Every answer is HTTP 200 (docs/decisions.md): an unknown name is a failure in the body.
  return ((await response.json()) as { status: string }).status === 'OK';
};

/**
 * Whether a state file the command keeps in `.local/import/`, written since `since` (not one another run left), says
 * some batch was sent but not yet followed.
 */
const anyOpenBatchSince = (since: number): boolean => {
  const folder = path.join(ROOT, '.local/import');
  if (!existsSync(folder)) return false;
  return readdirSync(folder).some((file) => {
    try {
      const state = path.join(folder, file);
      return statSync(state).mtimeMs >= since && (JSON.parse(readFileSync(state, 'utf8')) as { open: unknown[] }).open.length > 0;
    } catch {
      return false; // being written
    }
  });
};

before(
  async () => {
    rmSync(STATE_DIR, { recursive: true, force: true });
    rmSync(WORK_DIR, { recursive: true, force: true });
    const [port, inferencePort] = [await freePort(), await freePort()];
    stack = await startLocalStack({ port, inferencePort, adminToken: ADMIN_TOKEN, persistTo: STATE_DIR, log: stackLogOf('cli-import') });
    const created = await adminRequest<{ access_key: string; secret_key: string }>({ baseUrl: stack.baseUrl, token: ADMIN_TOKEN }, 'POST', '/admin/apps', { name: 'import-test' });
    assert.equal(created.status, 201);
    keys = created.body;
  },
  { timeout: 180_000 },
);

after(() => stack?.stop());

test('imports a folder, then skips it when run again', { timeout: 120_000 }, async () => {
  const folder = folderOf('folder', ['skimage_chelsea.jpg', 'opencv-doc_plant.jpg', 'skimage_coffee.jpg']);
  const first = await runImport(folder);
  assert.equal(first.code, 0, first.output);
  assert.match(first.output, /3 images searchable, 0 failed\./);
  assert.match(first.output, /images\/s ETA/);
  for (const name of ['skimage_chelsea', 'opencv-doc_plant', 'skimage_coffee']) assert.ok(await searchable(name), name);

  const second = await runImport(folder);
  assert.equal(second.code, 0, second.output);
  assert.match(second.output, /3 done before, 0 being processed, 0 to send/);
});

test("reads a spreadsheet's CSV (byte-order mark, CRLF, a quoted comma) and lists its failures with their codes", { timeout: 120_000 }, async () => {
  folderOf('csv-images', ['animals_birds_hen.png', 'animals_birds_magpie.png']);
  const csv = path.join(WORK_DIR, 'catalog.csv');
  writeFileSync(
    csv,
    '\ufeffim_name,file,brand\r\nred-hen,csv-images/animals_birds_hen.png,"Acme, Inc."\r\nbad name!,csv-images/animals_birds_magpie.png,x\r\nmissing,csv-images/nope.png,y\r\n',
  );
  const run = await runImport(csv);
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /bad name!: 107 Invalid im_name\./);
  assert.match(run.output, /missing: 201 Could not download the image from im_url\./);
  assert.match(run.output, /1 images searchable, 2 failed\./);
  assert.ok(await searchable('red-hen'));
  assert.equal(await searchable('animals_birds_hen'), false);
});

test('resumes a run killed after sending: the next run follows its batch to the end', { timeout: 180_000 }, async () => {
  const files = ['skimage_astronaut.jpg', 'skimage_rocket.jpg', 'opencv-doc_fruits.jpg', 'opencv-doc_orange.jpg'];
  const folder = folderOf('killed', files);
  const startedAt = Date.now();
  const killed = await runImport(folder, () => anyOpenBatchSince(startedAt));
  assert.notEqual(killed.code, 0);

  const resumed = await runImport(folder);
  assert.equal(resumed.code, 0, resumed.output);
  assert.match(resumed.output, /0 done before, 4 being processed, 0 to send/);
  assert.match(resumed.output, /4 images searchable, 0 failed\./);
  for (const file of files) assert.ok(await searchable(file.replace(/\.jpg$/, '')), file);
});
