import type { Hono, MiddlewareHandler } from 'hono';
import type { H } from 'hono/types';
import { z } from 'zod';
import { requireAdmin } from '../auth/admin';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { splitIndexed } from './indexed-params';
import { endpoint, type FailureFields } from './middleware';
import type { ParamBudget } from './params';
import { readNear } from './round-trips';
import { valueSchema, type ParamShape } from './param-schema';

/**
 * One declaration per route: the routing, the middleware that names the endpoint and reads its parameters and
 * credentials, and the route's OpenAPI operation (src/openapi/document.ts) all come from it, so the document cannot
 * say other than what the route does.
 */
type RouteFields = {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI's form: `{trans_id}`, not Hono's `:trans_id`. */
  path: string;
  operationId: string;
  tag: 'Search' | 'Data' | 'Admin' | 'Reference';
  summary: string;
  description?: string;
  pathParams?: ParamShape;
  query?: ParamShape;
  /** Parameters in a form body, or `{key}[i]` groups of one (`indexed`), or a JSON body (the admin API). */
  body?: { media: string[]; schema: z.ZodObject } | { media: string[]; indexed: z.ZodObject };
  /** MAX_BODY_BYTES unless the endpoint needs more. */
  maxBodyBytes?: number;
  /** How the body's parameters are counted as it streams: paramsWithin (http/params.ts) unless the endpoint says. */
  paramBudget?: () => ParamBudget;
  /** The success status and body; JSON unless `media` says otherwise. */
  success: { status: 200 | 201 | 202 | 302; schema?: z.ZodType; media?: string; description: string };
  /**
   * How a failure is answered: in the envelope with HTTP 200, the API's way (docs/decisions.md), with the fields
   * the endpoint's answer has when empty; or with these HTTP statuses (the admin API, the console's image bytes).
   */
  failure: { envelope: z.ZodType; fields?: FailureFields } | { statuses: number[] };
  /**
   * `near`: D1 is read through a session that may read a replica near the Worker (the searches, README Deploy);
   * otherwise from the primary, which reads every write at once (`/insert/status` right after its `/insert`).
   */
  reads?: 'near';
};

/**
 * Who may call: `client`, HTTP Basic or the app key (browsers and mobile clients, so CORS too); `backend`, Basic
 * only; `admin`, the admin token; `none`, anyone. `endpoint` is the envelope's `method`.
 */
type Access = { auth: 'client' | 'backend' | 'admin'; endpoint: string } | { auth: 'none' };

export type RouteDeclaration = RouteFields & Access;

/** A route: its declaration and what handles it once the declaration's middleware has run. */
export type Route = RouteDeclaration & { handlers: H<AppEnv>[] };

export const route = (declaration: RouteDeclaration, ...handlers: H<AppEnv>[]): Route => ({ ...declaration, handlers });

/** The form bodies the API reads parameters from, as the query string (docs/decisions.md). */
export const FORMS = ['application/x-www-form-urlencoded', 'multipart/form-data'];

/** The failures of an endpoint answered with HTTP statuses: bad parameters, credentials and errors, and these. */
export const httpErrors = (...statuses: number[]) => ({ statuses: [400, 401, ...statuses, 500] });

/** Hono's form of an OpenAPI path. */
const honoPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');

/** The body's file parameters, from its schema: a name (`image`), or any index of a key (`image[i]`) for an indexed body. */
function fileParams(body: RouteFields['body']): (name: string) => boolean {
  if (!body) return () => false;
  const shape = 'indexed' in body ? body.indexed.shape : body.schema.shape;
  const files = new Set(Object.keys(shape).filter((name) => valueSchema(shape[name] as z.ZodType) instanceof z.ZodFile));
  if (!('indexed' in body)) return (name) => files.has(name);
  return (name) => {
    const split = splitIndexed(name);
    return split?.index !== undefined && files.has(split.key);
  };
}

/** What runs before the handlers: the endpoint's name, body limits and failure envelope, then the credentials check. */
function accessMiddleware(route: RouteDeclaration): MiddlewareHandler<AppEnv>[] {
  if (route.auth === 'none') return [];
  const { failure, maxBodyBytes, paramBudget } = route;
  const named = endpoint(route.endpoint, {
    ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
    ...(paramBudget === undefined ? {} : { paramBudget }),
    isFile: fileParams(route.body),
    ...('envelope' in failure ? { failureFields: failure.fields } : { httpStatuses: true }),
  });
  if (route.auth === 'admin') return [named, requireAdmin];
  return [named, authenticate({ allowAppKey: route.auth === 'client' })];
}

/** Every route; one that reads `near` reads so from the start, its credentials too. */
export function mountRoutes(app: Hono<AppEnv>, routes: readonly Route[]): void {
  for (const route of routes) {
    const reads = route.reads === 'near' ? [readNear] : [];
    app.on(route.method.toUpperCase(), [honoPath(route.path)], ...reads, ...accessMiddleware(route), ...route.handlers);
  }
}

/** The paths a browser may call: those admitting the app key (docs/decisions.md), which take CORS. */
export const browserPaths = (routes: readonly Route[]): string[] =>
  [...new Set(routes.filter((route) => route.auth === 'client').map((route) => honoPath(route.path)))];
