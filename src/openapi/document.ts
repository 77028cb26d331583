import { z } from 'zod';
import { APP_KEY_PARAMETER } from '../auth/middleware';
import { GENERAL } from '../http/messages';
import { valueSchema, type ParamShape } from '../http/param-schema';
import type { RouteDeclaration } from '../http/route';
import * as responses from './responses';

export type JsonSchema = { [key: string]: unknown };

/** zod's integers are safe integers: saying so on every integer would only bury the bounds that matter. */
function dropSafeIntegerBounds({ jsonSchema }: { jsonSchema: JsonSchema }): void {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}

/** JSON Schema 2020-12, the dialect of OpenAPI 3.1, as a request carries the value (defaults make a field optional). */
const jsonSchema = (schema: z.ZodType): JsonSchema => {
  const options = { io: 'input', unrepresentable: 'any', override: dropSafeIntegerBounds } as const;
  const { $schema: _, ...rest } = z.toJSONSchema(schema, options) as JsonSchema;
  return rest;
};

/** Response schemas are components, named after their export: `searchResponse` is `SearchResponse`. */
const COMPONENTS = new Map<z.ZodType, string>(
  Object.entries(responses).map(([name, schema]) => [schema, name[0]!.toUpperCase() + name.slice(1)]),
);
const ref = (schema: z.ZodType): JsonSchema => ({ $ref: `#/components/schemas/${COMPONENTS.get(schema)}` });

const SECURITY: Record<RouteDeclaration['auth'], Record<string, string[]>[]> = {
  client: [{ basicAuth: [] }, { appKey: [] }],
  backend: [{ basicAuth: [] }],
  admin: [{ adminToken: [] }],
  none: [],
};

/** The HTTP statuses of the admin API and the console's image endpoint. */
const ERROR_STATUSES: Record<number, string> = {
  400: 'A missing, malformed or out-of-range parameter; the message says which.',
  401: `Bad or missing credentials: "${GENERAL.unauthorized}"`,
  404: 'An unknown im_name or app.',
  409: 'A reindex into another model is under way: ask again once it is done.',
  429: `"${GENERAL.busy}": past the application's calls a minute, with \`Retry-After\` at the next minute.`,
  500: `"${GENERAL.systemError}"`,
  503: 'The inference service is unavailable (loading its models, or down): the message says why; ask again.',
  507: 'Every index of a group is full: the message names the setting to add an index to (docs/scale.md).',
};

/** What an API endpoint's 200 may carry instead of its result (docs/decisions.md). */
const FAILURE_DESCRIPTION =
  'Or, with `status: fail` and still HTTP 200, a failure: bad credentials ' +
  `("${GENERAL.invalidKeys}", "${GENERAL.unauthorized}"), a bad parameter, an unknown name, id or transaction, an ` +
  `image or body over its size limit, a full collection ("${GENERAL.collectionFull}"), "${GENERAL.busy}" (with ` +
  `\`Retry-After\`) or "${GENERAL.systemError}".`;

function parameters(shape: ParamShape | undefined, location: 'path' | 'query'): JsonSchema[] {
  return Object.entries(shape ?? {}).map(([name, schema]) => {
    const { description, ...rest } = jsonSchema(schema);
    return {
      name,
      in: location,
      required: location === 'path' || !schema.isOptional(),
      ...(description === undefined ? {} : { description }),
      schema: rest,
      // A list is the parameter repeated: `fq=a&fq=b`.
      ...(valueSchema(schema) instanceof z.ZodArray ? { style: 'form', explode: true } : {}),
    };
  });
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A form of `{key}[i]` parameters, one group per item (docs/api.md, POST /insert): every key of the item schema, indexed. */
function indexedForm(item: z.ZodObject): JsonSchema {
  const schema = jsonSchema(item);
  const properties = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
  const patternProperties: Record<string, JsonSchema> = Object.fromEntries(
    properties.map(([key, value]) => [`^${escapeRegExp(key)}\\[\\d+\\]$`, { title: `${key}[i]`, ...value }]),
  );
  if (typeof schema.additionalProperties === 'object') {
    patternProperties['^[^\\[\\]]+\\[\\d+\\]$'] = { title: '<field>[i]', ...schema.additionalProperties };
  }
  const required = ((schema.required ?? []) as string[]).map((key) => `${key}[0]`);
  return { type: 'object', description: 'Item `i` (0-based) as `{key}[i]` parameters.', patternProperties, required };
}

function requestBody(body: NonNullable<RouteDeclaration['body']>): JsonSchema {
  const schema = 'indexed' in body ? indexedForm(body.indexed) : jsonSchema(body.schema);
  return { required: true, content: Object.fromEntries(body.media.map((media) => [media, { schema }])) };
}

/** The `status` values a response schema allows. */
function statuses(schema: z.ZodType): string[] {
  const status = ((jsonSchema(schema).properties ?? {}) as Record<string, JsonSchema>).status ?? {};
  return status.const === undefined ? ((status.enum ?? []) as string[]) : [String(status.const)];
}

/** An answer and its failure are told apart by `status`: `fail` is the failure, the other values the answer. */
const byStatus = (answer: z.ZodType, failure: z.ZodType): JsonSchema => ({
  propertyName: 'status',
  mapping: Object.fromEntries([
    ...statuses(answer).map((status) => [status, ref(answer).$ref]),
    ...statuses(failure).map((status) => [status, ref(failure).$ref]),
  ]),
});

const logId = { 'X-Log-ID': { $ref: '#/components/headers/X-Log-ID' } };

function operationResponses(operation: RouteDeclaration): JsonSchema {
  const { success, failure } = operation;
  if ('envelope' in failure && success.schema) {
    const schema = { oneOf: [ref(success.schema), ref(failure.envelope)], discriminator: byStatus(success.schema, failure.envelope) };
    const description = `${success.description} ${FAILURE_DESCRIPTION}`;
    return { [success.status]: { description, headers: logId, content: { 'application/json': { schema } } } };
  }
  const content = success.schema
    ? { 'application/json': { schema: ref(success.schema) } }
    : { [success.media ?? 'application/json']: {} };
  // A redirect has no body: where it leads is its Location.
  if (success.status === 302) {
    const location = { Location: { description: 'Where it leads.', schema: { type: 'string' } } };
    return { [success.status]: { description: success.description, headers: { ...logId, ...location } } };
  }
  const statuses = 'statuses' in failure ? failure.statuses : [];
  const failed = { 'application/json': { schema: ref(responses.httpFailure) } };
  return {
    [success.status]: { description: success.description, headers: logId, content },
    ...Object.fromEntries(
      statuses.map((status) => [status, { description: ERROR_STATUSES[status], headers: logId, content: failed }]),
    ),
  };
}

function pathItem(operation: RouteDeclaration): JsonSchema {
  const params = [...parameters(operation.pathParams, 'path'), ...parameters(operation.query, 'query')];
  return {
    operationId: operation.operationId,
    tags: [operation.tag],
    summary: operation.summary,
    ...(operation.description ? { description: operation.description } : {}),
    security: SECURITY[operation.auth],
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(operation.body ? { requestBody: requestBody(operation.body) } : {}),
    responses: operationResponses(operation),
  };
}

const DESCRIPTION = [
  'Indexes images with metadata and searches them by an image of the collection, an uploaded image or URL, ' +
    'detected objects, colour, or text (on an embedding model that reads text).',
  'Parameters are read from the query string, an urlencoded body and a multipart body alike, merged (a multipart ' +
    'body may hold only the file, with every other parameter in the query string); repeatable ones may repeat. ' +
    'Booleans accept `true`/`false`, `True`/`False` and `1`/`0`.',
  '**Status policy.** Every answer of the API is HTTP 200 with JSON `status` (`OK`, `warning`, `fail`), `method` and ' +
    '`error`, failures included, as the original service answers and its official SDKs expect; busy answers carry ' +
    '`Retry-After`. Numbered data errors are objects with `error_code`, every other message a plain ' +
    'string. Search answers carry `reqid`, which every answer also sends as `X-Log-ID`. Only the admin API, the ' +
    "console's `/image` and unknown paths answer with other HTTP statuses.",
  '**Forms of the official SDKs** beyond the contract\'s letter: `GET /recommendation` (the same as `/search`), ' +
    '`GET /uploadsearch` and `GET /discoversearch` with `im_url` or `im_id`, urlencoded POSTs of both upload searches ' +
    'when no file is sent, and `/insert` without `im_url` for an image already in the collection (a metadata-only ' +
    'update).',
].join('\n\n');

/** The OpenAPI 3.1 document of these routes' declarations (src/http/route.ts). */
export function openApiDocument(routes: readonly RouteDeclaration[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of routes) (paths[operation.path] ??= {})[operation.method] = pathItem(operation);
  return {
    openapi: '3.1.0',
    // The interface itself has no versions (docs/api.md, Versions): this numbers the document.
    info: { title: 'Image Search API', version: '1', description: DESCRIPTION },
    tags: [
      { name: 'Search', description: 'Search endpoints: Basic auth, or the app key for browser and mobile clients.' },
      { name: 'Data', description: 'Data endpoints: Basic auth only.' },
      { name: 'Admin', description: 'The dashboard of the original service, as an HTTP API (docs/decisions.md).' },
      { name: 'Reference', description: 'This document.' },
    ],
    paths,
    components: {
      schemas: Object.fromEntries([...COMPONENTS].map(([schema, name]) => [name, jsonSchema(schema)])),
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'Access key as user name, secret key as password.' },
        appKey: {
          type: 'apiKey',
          in: 'query',
          name: APP_KEY_PARAMETER,
          description: 'For browser and mobile clients (search endpoints only); also read from a form field.',
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The `ADMIN_TOKEN` secret.' },
      },
      headers: { 'X-Log-ID': { description: 'The `reqid` of the call.', schema: { type: 'string' } } },
    },
  };
}
