import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { GENERAL } from '../http/messages';
import { findAppByAccessKey, findAppByAppKeyHash, getSchema, type AppRecord, type StoredField } from '../storage/apps';
import { digestsEqual, hashKey } from './keys';

/** What authenticate sets besides the body's part of `params`: the calling application and its schema. */
export type AuthVariables = {
  app: AppRecord;
  /**
   * The calling application's schema as found with it: the isolate's copy, up to APP_CACHE_TTL_MS old, which the
   * searches read; writes read it as stored (storedSchema).
   */
  schema: StoredField[];
  /** Whether this request read the application from D1 rather than the isolate's copy: `schema` is then as stored. */
  schemaReadNow: boolean;
};

declare module 'hono' {
  interface ContextVariableMap extends AuthVariables {}
}

/** The parameter (query or form) that carries the app key of browser and mobile clients (docs/decisions.md). */
export const APP_KEY_PARAMETER = 'access_key';

const invalidKeys = (): ApiError => new ApiError(401, GENERAL.invalidKeys);
const unauthorized = (): ApiError => new ApiError(401, GENERAL.unauthorized);

function parseBasic(header: string): { accessKey: string; secretKey: string } | null {
  const match = /^Basic\s+(\S+)$/i.exec(header.trim());
  if (!match?.[1]) return null;
  let decoded: string;
  try {
    decoded = atob(match[1]);
  } catch {
    return null;
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { accessKey: decoded.slice(0, colon), secretKey: decoded.slice(colon + 1) };
}

/**
 * Resolves the calling application (docs/api.md, Authentication; docs/decisions.md), then reads the body's parameters. Backends send HTTP
 * Basic with the access and secret keys; browser and mobile clients send only the app key as `access_key`, which
 * `allowAppKey` admits (search endpoints). Credentials in the header or the query string are checked before a byte
 * of the body is read; only an app key sent as a form field (the JavaScript SDK's uploads) needs the body first, and
 * that body is read under the tighter UNAUTHENTICATED_BODY limits.
 */
export const authenticate = (options: { allowAppKey: boolean }) =>
  createMiddleware<AppEnv>(async (c, next) => {
    const request = c.req.raw;
    const { maxBytes, budget, isFile } = c.var.bodyLimits;
    const header = c.req.header('authorization');
    if (header) {
      const credentials = parseBasic(header);
      if (!credentials) throw invalidKeys();
      const found = await findAppByAccessKey(c.env, credentials.accessKey);
      // Hash even for an unknown access key, so the answer takes the same time either way.
      const presented = await hashKey(credentials.secretKey);
      if (!found || !digestsEqual(presented, found.secretKeyHash)) throw invalidKeys();
      c.set('app', found.app);
      c.set('schema', found.schema);
      c.set('schemaReadNow', found.readNow === true);
      c.set('params', await c.var.params.withBody(request, { maxBytes, budget: budget(), isFile }));
      return next();
    }
    if (!options.allowAppKey) throw unauthorized();

    let params = c.var.params;
    const inQuery = params.has(APP_KEY_PARAMETER);
    if (!inQuery) params = await params.withBody(request, { maxBytes, budget: budget(), isFile, unauthenticated: true });
    c.set('params', params);
    const appKey = params.string(APP_KEY_PARAMETER);
    if (appKey === undefined) throw unauthorized();
    const found = await findAppByAppKeyHash(c.env, await hashKey(appKey));
    if (!found) throw invalidKeys();
    c.set('app', found.app);
    c.set('schema', found.schema);
    c.set('schemaReadNow', found.readNow === true);
    if (inQuery) c.set('params', await params.withBody(request, { maxBytes, budget: budget(), isFile }));
    return next();
  });

/**
 * The calling application's schema as stored, for a write: the one authentication just read, else read now (one round
 * trip less on `/insert` when the isolate's copy had expired).
 */
export const storedSchema = async (c: Context<AppEnv>): Promise<StoredField[]> =>
  c.var.schemaReadNow ? c.var.schema : getSchema(c.env, c.var.app);
