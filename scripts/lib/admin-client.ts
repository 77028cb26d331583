import { apiUrlFromEnv } from './stack-record.ts';

/** A client of the admin API (docs/decisions.md), shared by `npm start` and `npm run admin`. */

export type AdminConfig = { baseUrl: string; token: string };
export type Field = { name: string; type: 'string' | 'int' | 'float' | 'text'; searchable: boolean };

/** npm start's admin token unless it was given ADMIN_TOKEN. */
export const DEFAULT_ADMIN_TOKEN = 'dev-admin-token';

/** The API (stack-record.ts: API_URL, PORT or the running npm start) and its admin token, with where the URL came from. */
export function adminConfigFromEnv(): AdminConfig & { from: string } {
  const { url, from, record } = apiUrlFromEnv();
  const token = process.env.ADMIN_TOKEN ?? DEFAULT_ADMIN_TOKEN;
  if (!process.env.ADMIN_TOKEN && record?.admin_token === 'ADMIN_TOKEN') {
    throw new Error('npm start was given its own ADMIN_TOKEN: set the same ADMIN_TOKEN here');
  }
  return { baseUrl: url, token, from };
}

export async function adminRequest<T>(config: AdminConfig, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(new URL(path, config.baseUrl), {
    method,
    headers: { authorization: `Bearer ${config.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).catch((error: unknown) => {
    throw new Error(`could not reach ${config.baseUrl} (is npm start running?): ${error instanceof Error ? error.message : String(error)}`);
  });
  return { status: response.status, body: (await response.json()) as T };
}
