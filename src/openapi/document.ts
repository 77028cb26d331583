import { z } from 'zod';
import { APP_KEY_PARAMETER } from '../auth/middleware';
import { GENERAL } from '../http/messages';
import { valueSchema, type ParamShape } from '../http/param-schema';
import { OPERATIONS, type Operation } from './operations';
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

const SECURITY: Record<Operation['auth'], Record<string, string[]>[]> = {
  client: [{ basicAuth: [] }, { appKey: [] }],
  backend: [{ basicAuth: [] }],
  admin: [{ adminToken: [] }],
  none: [],
};

const ERROR_STATUSES: Record<number, string> = {
  400: 'A missing, malformed or out-of-range parameter; the message says which.',
  401: `Bad or missing credentials: "${GENERAL.invalidKeys}" or "${GENERAL.unauthorized}"`,
  403: `"${GENERAL.collectionFull}"`,
  404: 'An unknown im_name, im_id, trans_id or app, or an empty collection.',
  413: 'A body or query image over its size limit.',
  429: `"${GENERAL.busy}": too many images are waiting to be processed.`,
  500: `"${GENERAL.systemError}"`,
  503: `"${GENERAL.busy}"`,
};

const FAILURES = { search: responses.searchFailure, data: responses.dataFailure };

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

/** A form of `{key}[i]` parameters, one group per item (spec 4.1): every key of the item schema, indexed. */
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

function requestBody(body: NonNullable<Operation['body']>): JsonSchema {
  const schema = 'indexed' in body ? indexedForm(body.indexed) : jsonSchema(body.schema);
  return { required: true, content: Object.fromEntries(body.media.map((media) => [media, { schema }])) };
}

const logId = { 'X-Log-ID': { $ref: '#/components/headers/X-Log-ID' } };

function operationResponses(operation: Operation): JsonSchema {
  const { success, errors } = operation;
  const content = success.schema
    ? { 'application/json': { schema: ref(success.schema) } }
    : { [success.media ?? 'application/json']: {} };
  const failure = { 'application/json': { schema: ref(FAILURES[errors.style]) } };
  return {
    [success.status]: { description: success.description, headers: logId, content },
    ...Object.fromEntries(
      errors.statuses.map((status) => [
        status,
        { description: ERROR_STATUSES[status], headers: logId, content: failure },
      ]),
    ),
  };
}

function pathItem(operation: Operation): JsonSchema {
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
    'detected objects, or colour.',
  'Parameters are read from the query string, an urlencoded body and a multipart body alike, merged; repeatable ' +
    'ones may repeat. Booleans accept `true`/`false`, `True`/`False` and `1`/`0`. Every response is JSON with ' +
    '`status` (`OK`, `warning`, `fail`), `method` and `error`; search endpoints report errors as message strings ' +
    'and carry `reqid`, data endpoints report objects with `error_code`.',
].join('\n\n');

function build(): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of OPERATIONS) (paths[operation.path] ??= {})[operation.method] = pathItem(operation);
  return {
    openapi: '3.1.0',
    // The interface itself has no versions (spec 9): this numbers the document.
    info: { title: 'Image Search API', version: '1', description: DESCRIPTION },
    tags: [
      { name: 'Search', description: 'Search endpoints: Basic auth, or the app key for browser and mobile clients.' },
      { name: 'Data', description: 'Data endpoints: Basic auth only.' },
      { name: 'Admin', description: 'The dashboard of the spec, as an HTTP API (DESIGN.md).' },
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

let built: JsonSchema | undefined;

/** The OpenAPI 3.1 document of every operation; built once per isolate. */
export const openApiDocument = (): JsonSchema => (built ??= build());
