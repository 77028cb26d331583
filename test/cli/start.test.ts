import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';

/**
 * `npm start` on a port other than 8787, in a fresh stack folder (STACK_DIR): a short summary (where things run, the
 * demo keys, what to do next), the rest in its log; a demo application with the README's schema; and
 * `npm run admin` and `npm run import`, given neither API_URL nor PORT, reach it through its stack.json.
 */

const STACK_DIR = path.join(ROOT, '.wrangler/start-test-stack');
const WORK_DIR = path.join(ROOT, '.local/start-test');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const ADMIN_TOKEN = 'start-test-admin-token';
/**
 * The environment of npm start and the commands: this test's stack folder, Node 22 first on the PATH (as under npm),
 * and no API_URL, PORT, keys or token.
 */
const { API_URL: _apiUrl, PORT: _port, ACCESS_KEY: _accessKey, SECRET_KEY: _secretKey, ADMIN_TOKEN: _token, ...inherited } = process.env;
const env = { ...inherited, PATH: `${path.dirname(NODE)}${path.delimiter}${process.env.PATH}`, STACK_DIR };

type Run = { code: number | null; stdout: string; stderr: string };

let start: ChildProcess;
let port: number;
let summary = '';
let demo: { app_id: string; access_key: string; secret_key: string; app_key: string };

function runScript(script: string, args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const child = spawn(NODE, [path.join(ROOT, 'scripts', script), ...args], { cwd: ROOT, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

before(
  async () => {
    rmSync(STACK_DIR, { recursive: true, force: true });
    rmSync(WORK_DIR, { recursive: true, force: true });
    port = await freePort();
    start = spawn(NODE, [path.join(ROOT, 'scripts/start.ts')], {
      cwd: ROOT,
      env: { ...env, PORT: String(port), INFERENCE_PORT: String(await freePort()), ADMIN_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    start.stdout!.on('data', (chunk: Buffer) => (summary += chunk));
    start.stderr!.on('data', (chunk: Buffer) => (summary += chunk));
    while (!summary.includes('Ctrl-C stops') && start.exitCode === null) await sleep(250);
    assert.equal(start.exitCode, null, summary);
    demo = JSON.parse(readFileSync(path.join(STACK_DIR, 'demo-app.json'), 'utf8')) as typeof demo;
  },
  { timeout: 180_000 },
);

after(async () => {
  if (start && start.exitCode === null) {
    const exited = new Promise((resolve) => start.once('exit', resolve));
    start.kill('SIGTERM');
    await exited;
  }
});

test('prints a short summary: where things run, the demo keys, how to load the test images, and where the rest went', () => {
  const url = `http://127.0.0.1:${port}`;
  for (const line of [`${url}\n`, `${url}/console/`, `${url}/docs`, demo.app_id, demo.access_key, demo.secret_key, demo.app_key, 'npm run import -- test/fixtures/images']) {
    assert.ok(summary.includes(line), `${line} in:\n${summary}`);
  }
  assert.ok(summary.split('\n').length < 40, summary);
  assert.doesNotMatch(summary, /Migrations to be applied|Your Worker has access to the following bindings/);
  const log = path.join(STACK_DIR, 'start.log');
  assert.ok(summary.includes(path.relative(ROOT, log)), summary);
  const logged = readFileSync(log, 'utf8');
  assert.match(logged, /Migrations to be applied/);
  assert.match(logged, new RegExp(`Ready on ${url}`));
});

test("npm run admin finds the stack by its stack.json, asks for npm start's ADMIN_TOKEN, and sees the demo schema", async () => {
  const withoutToken = await runScript('admin.ts', ['get-app', demo.app_id]);
  assert.equal(withoutToken.code, 1, withoutToken.stderr);
  assert.match(withoutToken.stderr, /npm start was given its own ADMIN_TOKEN: set the same ADMIN_TOKEN here/);

  const run = await runScript('admin.ts', ['get-app', demo.app_id], { ADMIN_TOKEN });
  assert.equal(run.code, 0, run.stderr);
  assert.ok(run.stderr.includes(`Using http://127.0.0.1:${port} (from npm start's .wrangler/start-test-stack/stack.json)`), run.stderr);
  const app = JSON.parse(run.stdout) as { schema: { fields: unknown[] } };
  // The README's fields, in the schema's order (by name).
  assert.deepEqual(app.schema.fields, [
    { name: 'brand', type: 'string', searchable: true },
    { name: 'category', type: 'string', searchable: true },
    { name: 'color', type: 'string', searchable: true },
    { name: 'description', type: 'text', searchable: true },
    { name: 'price', type: 'float', searchable: true },
  ]);
});

test('npm run import sends to the same stack with the demo keys, and says the minimum beside a 203', { timeout: 120_000 }, async () => {
  const folder = path.join(WORK_DIR, 'images');
  mkdirSync(folder, { recursive: true });
  for (const file of ['skimage_chelsea.jpg', 'food_fruit_apple_fuji.png']) symlinkSync(path.join(IMAGES_DIR, file), path.join(folder, file));
  const run = await runScript('import.ts', [folder]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.ok(run.stdout.includes(`Using http://127.0.0.1:${port} (from npm start's .wrangler/start-test-stack/stack.json)`), run.stdout);
  assert.match(run.stdout, /food_fruit_apple_fuji: 203 Unsupported image dimension\. \(at least 100 px on one side\)/);
  assert.match(run.stdout, /1 images searchable, 1 failed\./);
});

test('a stopped npm start takes its stack.json away', async () => {
  const record = path.join(STACK_DIR, 'stack.json');
  assert.ok(existsSync(record));
  const exited = new Promise((resolve) => start.once('exit', resolve));
  start.kill('SIGTERM');
  await exited;
  assert.equal(existsSync(record), false);
});
