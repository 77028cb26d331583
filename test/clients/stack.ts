import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import { adminRequest, type AdminConfig } from '../../scripts/lib/admin-client.ts';
import { insertForm, waitForInsert, type AuthHeader } from '../../scripts/lib/api-client.ts';
import { startLocalStack, type LocalStack } from '../../scripts/lib/local-stack.ts';
import { stackLogOf } from '../support/test-log.ts';
import { ROOT } from '../../scripts/lib/wrangler-env.ts';
import { startFixtureServer } from '@edge-image-search/devtools/fixture-server';
import { freePort } from '@edge-image-search/devtools/free-port';
import { startInferenceProxy, type InferenceProxy } from '../support/inference-proxy.ts';
import { imageNameOf } from '@edge-image-search/devtools/image-names';

/**
 * The local stack the client-compatibility suite talks to, as a user's code would: `wrangler dev` on a free port with
 * fresh state, the inference service behind a proxy that counts its predictions, a server of the test images, and an
 * application with a schema and a small catalog.
 */

export type Keys = { app_id: string; access_key: string; secret_key: string; app_key: string };

export type ClientStack = {
  baseUrl: string;
  /** Where the test images are served: `${imagesUrl}/<file>`. */
  imagesUrl: string;
  keys: Keys;
  basic: AuthHeader;
  /** An application with no images. */
  emptyKeys: Keys;
  inference: InferenceProxy;
  stop(): Promise<void>;
};

const STATE_DIR = path.join(ROOT, '.wrangler/clients-test-state');
const ADMIN_TOKEN = 'clients-test-admin-token';

export const SCHEMA = [
  { name: 'brand', type: 'string', searchable: true },
  { name: 'category', type: 'string', searchable: true },
  { name: 'price', type: 'float', searchable: true },
  { name: 'description', type: 'text', searchable: true },
];

/** The catalog: file, brand, category, price. The plant photo's pot is what the detector finds in it. */
export const CATALOG = [
  ['opencv-doc_plant.jpg', 'greenhouse', 'plant', '25'],
  ['opencv-doc_aloeL.jpg', 'greenhouse', 'plant', '18'],
  ['household_dishes_pitcher_small.png', 'kitchenware', 'pitcher', '12.5'],
  ['skimage_chelsea.jpg', 'petshop', 'cat', '99'],
  ['animals_birds_hen.png', 'farm', 'bird', '7'],
  ['animals_birds_rooster.png', 'farm', 'bird', '8'],
  ['food_fruit_kiwi.png', 'grocer', 'fruit', '1.2'],
  ['opencv-doc_building.jpg', 'realty', 'building', '500000'],
] as const;

export async function startClientStack(): Promise<ClientStack> {
  rmSync(STATE_DIR, { recursive: true, force: true });
  const [port, inferencePort, proxyPort, imagesPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const started: { stop(): Promise<void> }[] = [];
  const stop = async () => {
    for (const part of started.reverse()) await part.stop();
  };
  try {
    const images: Server = await startFixtureServer(imagesPort);
    started.push({ stop: () => new Promise((resolve) => { images.closeAllConnections(); images.close(() => resolve()); }) });
    const inference = await startInferenceProxy({ port: proxyPort, upstream: `http://127.0.0.1:${inferencePort}` });
    started.push({ stop: () => inference.close() });
    const stack: LocalStack = await startLocalStack({
      port,
      inferencePort,
      adminToken: ADMIN_TOKEN,
      persistTo: STATE_DIR,
      vars: { INFERENCE_URL: inference.url },
      log: stackLogOf('clients'),
    });
    started.push({ stop: async () => stack.stop() });

    const admin: AdminConfig = { baseUrl: stack.baseUrl, token: ADMIN_TOKEN };
    const create = async (name: string): Promise<Keys> => {
      const created = await adminRequest<Keys>(admin, 'POST', '/admin/apps', { name });
      assert.equal(created.status, 201);
      assert.equal((await adminRequest(admin, 'PUT', `/admin/apps/${created.body.app_id}/schema`, { fields: SCHEMA })).status, 200);
      return created.body;
    };
    const [keys, emptyKeys] = [await create('clients'), await create('clients-empty')];
    const basic: AuthHeader = { authorization: `Basic ${btoa(`${keys.access_key}:${keys.secret_key}`)}` };
    const imagesUrl = `http://127.0.0.1:${imagesPort}/images`;
    const form = insertForm(
      CATALOG.map(([file, brand, category, price]) => ({
        name: imageNameOf(file),
        url: `${imagesUrl}/${file}`,
        metadata: { brand, category, price, description: `${category} by ${brand}` },
      })),
    );
    const inserted = (await (await fetch(`${stack.baseUrl}/insert`, { method: 'POST', headers: basic, body: form })).json()) as { status: string; trans_id: number };
    assert.equal(inserted.status, 'OK', JSON.stringify(inserted));
    const status = await waitForInsert(stack.baseUrl, basic, inserted.trans_id, { pollMs: 300, timeoutMs: 180_000 });
    assert.equal(status.success_count, CATALOG.length, JSON.stringify(status));
    return { baseUrl: stack.baseUrl, imagesUrl, keys, basic, emptyKeys, inference, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
