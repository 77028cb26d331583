import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { adminRequest, type AdminConfig } from './lib/admin-client.ts';
import { startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm start`: the whole service on this machine, with no Cloudflare account and no network (`lib/local-stack.ts`);
 * creates a demo application once, and prints its keys.
 */

const port = Number(process.env.PORT ?? 8787);
const inferencePort = Number(process.env.INFERENCE_PORT ?? port + 1);
const admin: AdminConfig = { baseUrl: `http://127.0.0.1:${port}`, token: process.env.ADMIN_TOKEN ?? 'dev-admin-token' };
const demoFile = path.join(ROOT, '.wrangler/demo-app.json');
let stack: LocalStack | undefined;

function stopAll(code: number): never {
  stack?.stop();
  process.exit(code);
}
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));

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
  stack = await startLocalStack({ port, inferencePort, adminToken: admin.token, onExit: (code) => stopAll(code ?? 1) });

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
