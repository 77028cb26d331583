import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { commandLogFile, openCommandLog } from './lib/command-log.ts';
import { adminRequest, DEFAULT_ADMIN_TOKEN, type AdminConfig, type Field } from './lib/admin-client.ts';
import { simulatedDistance, startLocalStack, type LocalStack } from './lib/local-stack.ts';
import { DEMO_KEYS, removeStackRecord, stackDir, writeStackRecord } from './lib/stack-record.ts';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm start`: the whole service on this machine, with no Cloudflare account and no network (`lib/local-stack.ts`);
 * creates a demo application once, prints a summary (where things run, the demo keys, what to do next) and sends
 * everything else (migrations, wrangler, the inference service) to a log file. Records the stack in
 * `<STACK_DIR>/stack.json` for `npm run import` and `npm run admin` (lib/stack-record.ts).
 */

const port = Number(process.env.PORT ?? 8787);
const inferencePort = Number(process.env.INFERENCE_PORT ?? port + 1);
const admin: AdminConfig = { baseUrl: `http://127.0.0.1:${port}`, token: process.env.ADMIN_TOKEN ?? DEFAULT_ADMIN_TOKEN };
const dir = stackDir();
const demoFile = path.join(dir, DEMO_KEYS);
// Another STACK_DIR (a test's) keeps its log beside its data, away from the usual npm start's.
const logFile = process.env.STACK_DIR ? path.join(dir, 'start.log') : commandLogFile('start');
const shown = (file: string): string => path.relative(ROOT, file);

/** The fields the README's examples use (README, Use it). */
const DEMO_SCHEMA: Field[] = [
  { name: 'brand', type: 'string', searchable: true },
  { name: 'category', type: 'string', searchable: true },
  { name: 'price', type: 'float', searchable: true },
  { name: 'color', type: 'string', searchable: true },
  { name: 'description', type: 'text', searchable: true },
];

const log = openCommandLog(logFile);
let stack: LocalStack | undefined;
let stopping = false;

function stopAll(code: number): never {
  stopping = true;
  stack?.stop();
  removeStackRecord();
  process.exit(code);
}
process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));

/** Says what went wrong with the log's last lines (where wrangler's and the service's errors are), then stops. */
function fail(message: string): never {
  log.close();
  console.error(log.failure(message));
  return stopAll(1);
}

type DemoApp = { app_id: string; access_key: string; secret_key: string; app_key: string };

/**
 * The demo application is created once; later starts reuse it while the local database still has it. With its
 * embedding model (an earlier start's may not be today's default) and its schema, set to DEMO_SCHEMA when empty.
 */
async function ensureDemoApp(defaultModel: string): Promise<DemoApp & { embedModel: string; fields: Field[] }> {
  const demo = (await findDemoApp()) ?? (await createDemoApp(defaultModel));
  if (demo.fields.length > 0) return demo;
  const schema = await adminRequest(admin, 'PUT', `/admin/apps/${demo.app_id}/schema`, { fields: DEMO_SCHEMA });
  if (schema.status !== 200) throw new Error(`could not set the demo app's schema: ${JSON.stringify(schema.body)}`);
  return { ...demo, fields: DEMO_SCHEMA };
}

async function findDemoApp(): Promise<(DemoApp & { embedModel: string; fields: Field[] }) | undefined> {
  let saved: DemoApp;
  try {
    saved = JSON.parse(readFileSync(demoFile, 'utf8')) as DemoApp;
  } catch {
    return undefined; // no saved demo app yet
  }
  const found = await adminRequest<{ embed_model: string; schema: { fields: Field[] } }>(admin, 'GET', `/admin/apps/${saved.app_id}`);
  return found.status === 200 ? { ...saved, embedModel: found.body.embed_model, fields: found.body.schema.fields } : undefined;
}

async function createDemoApp(defaultModel: string): Promise<DemoApp & { embedModel: string; fields: Field[] }> {
  const created = await adminRequest<DemoApp>(admin, 'POST', '/admin/apps', { name: 'demo' });
  if (created.status !== 201) throw new Error(`could not create the demo app: ${JSON.stringify(created.body)}`);
  const { app_id, access_key, secret_key, app_key } = created.body;
  mkdirSync(path.dirname(demoFile), { recursive: true });
  writeFileSync(demoFile, JSON.stringify({ app_id, access_key, secret_key, app_key }, null, 2));
  return { app_id, access_key, secret_key, app_key, embedModel: defaultModel, fields: [] };
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
  console.log(`Starting image search on 127.0.0.1:${port} (details in ${log.shown})...`);
  // D1_SIMULATED_PRIMARY_MS and D1_SIMULATED_REPLICA_MS, when set here, reach the Worker (README, Run it).
  stack = await startLocalStack({
    port,
    inferencePort,
    adminToken: admin.token,
    persistTo: path.join(dir, 'state'),
    vars: simulatedDistance(),
    log: log.fd,
    onExit: (code) => stopping || fail(`wrangler stopped (exit code ${code}).`),
  });

  const demo = await ensureDemoApp(stack.defaultEmbedModel);
  writeStackRecord({
    url: stack.baseUrl,
    port,
    inference_url: stack.inferenceUrl,
    pid: process.pid,
    admin_token: process.env.ADMIN_TOKEN ? 'ADMIN_TOKEN' : 'default',
    demo_keys: demoFile,
    log: logFile,
  });
  const url = stack.baseUrl;
  console.log(`
Image search is running:
  API (the Worker)    ${url}
  console             ${url}/console/
  API docs            ${url}/docs
  inference service   ${stack.inferenceUrl}

${describeModels(stack, demo)}

Demo application ${demo.app_id} (schema: ${demo.fields.map(({ name, type }) => `${name}:${type}`).join(', ')})
  access key   ${demo.access_key}
  secret key   ${demo.secret_key}
  app key      ${demo.app_key}   (browser clients: ?access_key=<app key>, search endpoints only)
  admin token  ${admin.token}

Load the test images:  npm run import -- test/fixtures/images
(npm run import and npm run admin find this stack by ${shown(path.join(dir, 'stack.json'))})

Migrations, wrangler's and the inference service's output: ${log.shown}. Ctrl-C stops.`);
}

main().catch((error: unknown) => fail(`npm start failed: ${error instanceof Error ? error.message : String(error)}`));
