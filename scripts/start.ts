import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { adminRequest, type AdminConfig } from './lib/admin-client.ts';
import { startInference } from './lib/inference-process.ts';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/**
 * `npm start`: the whole service on this machine, with no Cloudflare account and no network. Applies the D1
 * migrations, starts the inference service and `wrangler dev` (local D1, R2, Queues and vector index), creates a demo
 * application once, and prints its keys.
 */

const port = Number(process.env.PORT ?? 8787);
const inferencePort = Number(process.env.INFERENCE_PORT ?? port + 1);
const admin: AdminConfig = { baseUrl: `http://127.0.0.1:${port}`, token: process.env.ADMIN_TOKEN ?? 'dev-admin-token' };
const demoFile = path.join(ROOT, '.wrangler/demo-app.json');
const wranglerBin = path.join(ROOT, 'node_modules/.bin/wrangler');
const children: ChildProcess[] = [];

useLocalWrangler();

function stopAll(code: number): never {
  for (const child of children) child.kill('SIGTERM');
  process.exit(code);
}
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));

async function waitFor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}

type DemoApp = { app_id: string; access_key: string; secret_key: string; app_key: string };

/** The demo application is created once; later starts reuse it while the local database still has it. */
async function ensureDemoApp(): Promise<DemoApp> {
  try {
    const saved = JSON.parse(readFileSync(demoFile, 'utf8')) as DemoApp;
    if ((await adminRequest(admin, 'GET', `/admin/apps/${saved.app_id}`)).status === 200) return saved;
  } catch {
    // no saved demo app yet
  }
  const created = await adminRequest<DemoApp>(admin, 'POST', '/admin/apps', { name: 'demo' });
  if (created.status !== 201) throw new Error(`could not create the demo app: ${JSON.stringify(created.body)}`);
  const { app_id, access_key, secret_key, app_key } = created.body;
  mkdirSync(path.dirname(demoFile), { recursive: true });
  writeFileSync(demoFile, JSON.stringify({ app_id, access_key, secret_key, app_key }, null, 2));
  return { app_id, access_key, secret_key, app_key };
}

async function main(): Promise<void> {
  const migrate = spawnSync(wranglerBin, ['d1', 'migrations', 'apply', 'image-search', '--local'], { stdio: 'inherit', cwd: ROOT });
  if (migrate.status !== 0) throw new Error('applying the D1 migrations failed');

  console.log(`Starting the inference service on 127.0.0.1:${inferencePort} (loading models)...`);
  // A fresh shared secret per run: only this Worker can call this inference service.
  const inferenceSecret = randomBytes(16).toString('hex');
  children.push(await startInference(inferencePort, { secret: inferenceSecret }));

  const wrangler = spawn(
    wranglerBin,
    [
      'dev',
      '--ip', '127.0.0.1',
      '--port', String(port),
      '--var', `ADMIN_TOKEN:${admin.token}`,
      '--var', `INFERENCE_URL:http://127.0.0.1:${inferencePort}`,
      '--var', `INFERENCE_SECRET:${inferenceSecret}`,
      '--show-interactive-dev-session=false',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'], cwd: ROOT },
  );
  children.push(wrangler);
  wrangler.on('exit', (code) => stopAll(code ?? 1));
  await waitFor(`${admin.baseUrl}/`, 120_000);

  const demo = await ensureDemoApp();
  const auth = `${demo.access_key}:${demo.secret_key}`;
  console.log(`
Image search is running at ${admin.baseUrl}

Demo application ${demo.app_id}
  access key  ${demo.access_key}
  secret key  ${demo.secret_key}
  app key     ${demo.app_key}   (browser clients: ?access_key=<app key>, search endpoints only)
  admin token ${admin.token}

Try:
  curl -u ${auth} ${admin.baseUrl}/insert -d 'im_name[0]=shoe-1' -d 'im_url[0]=https://example.com/shoe.jpg'
  curl -u ${auth} '${admin.baseUrl}/search?im_name=shoe-1&score=true'
`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  stopAll(1);
});
