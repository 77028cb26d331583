import path from 'node:path';
import { adminRequest, type AdminConfig, type Field } from './admin-client.ts';

/**
 * The search API as the project's commands use it (`npm run eval`, `bench`, `load`): a new application's Basic auth
 * header, inserts by URL, and waiting for their transactions.
 */

export type AuthHeader = { authorization: string };
export type InsertStatus = { processed_percent: number; success_count: number; fail_count: number; total: number; error_list: { im_name: string; error_code: number; error_message: string }[] };

/** `/insert` takes at most 100 images a call (spec 2.1). */
export const INSERT_BATCH = 100;

/**
 * A new application's auth header; on `embedModel` (an id of wrangler.toml's EMBED_MODELS) or else EMBED_MODEL, with
 * the metadata schema `fields` if given.
 */
export async function createApplication(admin: AdminConfig, name: string, embedModel?: string, fields?: Field[]): Promise<AuthHeader> {
  return (await createApplicationWithId(admin, name, embedModel, fields)).auth;
}

/** createApplication's application with its id, for the admin API's calls on it (`/admin/apps/{app_id}/...`). */
export async function createApplicationWithId(admin: AdminConfig, name: string, embedModel?: string, fields?: Field[]): Promise<{ appId: string; auth: AuthHeader }> {
  const created = await adminRequest<{ app_id: string; access_key: string; secret_key: string }>(admin, 'POST', '/admin/apps', { name, embed_model: embedModel });
  if (created.status !== 201) throw new Error(`could not create the application ${name}: ${JSON.stringify(created.body)}`);
  if (fields) {
    const schema = await adminRequest(admin, 'PUT', `/admin/apps/${created.body.app_id}/schema`, { fields });
    if (schema.status !== 200) throw new Error(`could not set the schema of ${name}: ${JSON.stringify(schema.body)}`);
  }
  return { appId: created.body.app_id, auth: { authorization: `Basic ${Buffer.from(`${created.body.access_key}:${created.body.secret_key}`).toString('base64')}` } };
}

/** An image's name from its file name: an im_name allows a-z A-Z 0-9 - _ . : (spec 2.1), at most 128 characters. */
export const imageNameOf = (file: string): string => path.parse(file).name.replace(/[^\w.:-]/g, '_').slice(0, 128);

/** The urlencoded body of one `/insert` call: `im_name[i]`, `im_url[i]` and `<field>[i]` for the metadata. */
export function insertForm(images: { name: string; url: string; metadata?: Record<string, string> }[]): URLSearchParams {
  const form = new URLSearchParams();
  images.forEach((image, index) => {
    form.set(`im_name[${index}]`, image.name);
    form.set(`im_url[${index}]`, image.url);
    for (const [field, value] of Object.entries(image.metadata ?? {})) form.set(`${field}[${index}]`, value);
  });
  return form;
}

/** Polls a transaction until it reports 100 %, then answers its status with up to 100 failures listed. */
export async function waitForInsert(baseUrl: string, auth: AuthHeader, transId: number, options: { pollMs: number; timeoutMs: number }): Promise<InsertStatus> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const response = await fetch(`${baseUrl}/insert/status/${transId}?error_limit=${INSERT_BATCH}`, { headers: auth });
    const [status] = ((await response.json()) as { result?: InsertStatus[] }).result ?? [];
    if (status?.processed_percent === 100) return status;
    if (Date.now() > deadline) throw new Error(`transaction ${transId} is still at ${status?.processed_percent ?? '?'} % after ${options.timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
}
