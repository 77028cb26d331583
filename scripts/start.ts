import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { adminRequest, type AdminConfig } from './lib/admin-client.ts';
import { simulatedDistance, startLocalStack, type LocalStack } from './lib/local-stack.ts';
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

/**
 * The demo application is created once; later starts reuse it while the local database still has it. With its
 * embedding model: an earlier start's may not be today's default.
 */
async function ensureDemoApp(defaultModel: string): Promise<DemoApp & { embedModel: string }> {
  try {
    const saved = JSON.parse(readFileSync(demoFile, 'utf8')) as DemoApp;
    const found = await adminRequest<{ embed_model: string }>(admin, 'GET', `/admin/apps/${saved.app_id}`);
    if (found.status === 200) return { ...saved, embedModel: found.body.embed_model };
  } catch {
    // no saved demo app yet
  }
  const created = await adminRequest<DemoApp>(admin, 'POST', '/admin/apps', { name: 'demo' });
  if (created.status !== 201) throw new Error(`could not create the demo app: ${JSON.stringify(created.body)}`);
  const { app_id, access_key, secret_key, app_key } = created.body;
  mkdirSync(path.dirname(demoFile), { recursive: true });
  writeFileSync(demoFile, JSON.stringify({ app_id, access_key, secret_key, app_key }, null, 2));
  return { app_id, access_key, secret_key, app_key, embedModel: defaultModel };
}

/** Which models the service loaded, which one new applications get, and those EMBED_MODELS keeps unloaded. */
function describeModels(running: LocalStack, demo: { app_id: string; embedModel: string }): string {
  const loaded = new Set(running.served.map(({ id }) => id));
  const lines = [
    `Embedding models (INFERENCE_EMBED_MODELS=${process.env.INFERENCE_EMBED_MODELS || 'unset: the bundled ones'}):`,
    ...running.served.map(({ id, dim, text }) => `  ${id}  ${dim}-d${text ? ', reads text' : ''}${id === running.defaultEmbedModel ? '  <- new applications' : ''}`),
    ...Object.keys(running.embedModels)
      .filter((id) => !loaded.has(id))
      .map((id) => `  ${id}  not loaded (kept from wrangler.toml: applications on it can only move off it, by a reindex)`),
  ];
  if (demo.embedModel !== running.defaultEmbedModel) {
    lines.push(`The demo application is on ${demo.embedModel}; to move it: npm run admin -- reindex ${demo.app_id} ${running.defaultEmbedModel}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  // D1_SIMULATED_PRIMARY_MS and D1_SIMULATED_REPLICA_MS, when set here, reach the Worker (README, Run it).
  stack = await startLocalStack({ port, inferencePort, adminToken: admin.token, vars: simulatedDistance(), onExit: (code) => stopAll(code ?? 1) });

  const demo = await ensureDemoApp(stack.defaultEmbedModel);
  const auth = `${demo.access_key}:${demo.secret_key}`;
  console.log(`
Image search is running at ${admin.baseUrl}

${describeModels(stack, demo)}

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
