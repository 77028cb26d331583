/** A client of the admin API (docs/decisions.md), shared by `npm start` and `npm run admin`. */

export type AdminConfig = { baseUrl: string; token: string };
export type Field = { name: string; type: 'string' | 'int' | 'float' | 'text'; searchable: boolean };

export const adminConfigFromEnv = (): AdminConfig => ({
  baseUrl: process.env.API_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`,
  token: process.env.ADMIN_TOKEN ?? 'dev-admin-token',
});

export async function adminRequest<T>(config: AdminConfig, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(new URL(path, config.baseUrl), {
    method,
    headers: { authorization: `Bearer ${config.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}
