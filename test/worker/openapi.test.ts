import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { app } from '../../src/app';
import * as responses from '../../src/openapi/responses';
import { basicAuth, call, createApp, fixtureUrl, insert, insertAndWait, waitForTransaction, type Credentials } from './helpers';

type Schema = {
  type?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  enum?: string[];
  properties?: Record<string, Schema>;
  required?: string[];
  $ref?: string;
};
type Parameter = { name: string; in: string; required: boolean; schema: Schema };
type Operation = {
  operationId: string;
  security: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
};
type Document = {
  openapi: string;
  info: { title: string; version: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> };
};
type Body = { status: string; error: (string | { error_message: string })[]; [field: string]: unknown };

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** Parameters that some others only make the endpoint read (their descriptions say so). */
const COMPANIONS: Record<string, Record<string, string>> = {
  facets_limit: { facets: 'brand' },
  facets_show_count: { facets: 'brand' },
  group_limit: { group_by: 'brand' },
  dedup_score_threshold: { dedup: 'true' },
};

let document: Document;

const operations = () =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );
const operationOf = (operationId: string) => operations().find((entry) => entry.operation.operationId === operationId)!;

/** The parameters an operation documents, query or multipart alike, with whether each is required. */
function documentedParameters(operation: Operation): Parameter[] {
  const query = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query');
  const form = operation.requestBody?.content['multipart/form-data']?.schema;
  const fields = Object.entries(form?.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'body',
    required: form?.required?.includes(name) ?? false,
    schema,
  }));
  return [...query, ...fields];
}

const errorMessage = (body: Body): string | undefined => {
  const [first] = body.error;
  return typeof first === 'string' ? first : first?.error_message;
};

/** The answer an upload search without an image gets from an empty collection, once its parameters passed. */
const EMPTY_COLLECTION = "App doesn't have any images.";
/** Whether a call got past its parameter checks: API failures are HTTP 200 `fail`, the console image's are 4xx. */
const passedChecks = ({ status, body }: { status: number; body: Body }): boolean =>
  status === 200 && (body.status !== 'fail' || errorMessage(body) === EMPTY_COLLECTION);
const UPLOAD_SEARCHES = ['uploadsearch', 'uploadsearchByReference', 'discoversearch', 'discoversearchByReference'];
/** Checked like the upload searches, on the empty collection: the stocked application's model reads no text. */
const TEXT_SEARCHES = ['textsearch', 'textsearchByForm'];

describe('OpenAPI document and reference page', () => {
  let stocked: Credentials;
  let empty: Credentials;
  type Base = { app: Credentials; path: string; params: Record<string, string> };
  /** How to call each operation that takes parameters so that it succeeds. */
  let bases: Record<string, Base>;

  /**
   * How to call an operation so that it gets past its parameter checks, cheaply: the upload searches, given no image
   * and an empty collection, answer that the collection is empty once their parameters are checked; the text
   * searches too, given their text.
   */
  const checking = (operationId: string): Base => {
    const { path } = operationOf(operationId);
    if (UPLOAD_SEARCHES.includes(operationId)) return { app: empty, path, params: {} };
    if (TEXT_SEARCHES.includes(operationId)) return { app: empty, path, params: { q: 'red' } };
    return bases[operationId]!;
  };

  async function callWith(
    operationId: string,
    extra: Record<string, string>,
    { base = bases[operationId]!, omit = [] }: { base?: Base; omit?: string[] } = {},
  ): Promise<{ status: number; body: Body }> {
    const { method, operation } = operationOf(operationId);
    const merged = Object.entries({ ...base.params, ...extra });
    const params = Object.fromEntries(merged.filter(([name]) => !omit.includes(name)));
    const headers = basicAuth(base.app);
    let response: Response;
    if (operation.requestBody?.content['multipart/form-data']) {
      const form = new FormData();
      for (const [name, value] of Object.entries(params)) form.append(name, value);
      response = await call(base.path, { method: method.toUpperCase(), headers, body: form });
    } else {
      response = await call(`${base.path}?${new URLSearchParams(params)}`, { method: method.toUpperCase(), headers });
    }
    return { status: response.status, body: await response.json<Body>() };
  }

  beforeAll(async () => {
    document = await (await call('/openapi.json')).json<Document>();
    const fields = [{ name: 'brand', type: 'string' as const, searchable: true }];
    let reading: Credentials;
    [stocked, empty, reading] = await Promise.all([
      createApp('openapi', fields),
      createApp('openapi-empty', fields),
      createApp('openapi-text', fields, env.TEXT_EMBED_MODEL),
    ]);
    const red = { im_name: 'red', im_url: fixtureUrl('/palette/ff0000:100'), brand: 'acme' };
    await Promise.all([insertAndWait(stocked, [red]), insertAndWait(reading, [red])]);
    // A transaction of its own, so that the image searched is never being replaced.
    const inserted = await insert(stocked, [{ im_name: 'green', im_url: fixtureUrl('/palette/00ff00:100') }]);
    const { trans_id: transId } = await inserted.json<{ trans_id: number }>();
    // Searchable before the tests run: `/search` of red answers green (a test reads its first result).
    await waitForTransaction(stocked, transId);
    const hen = fixtureUrl('/images/animals_birds_hen.png');
    bases = {
      search: { app: stocked, path: '/search', params: { im_name: 'red' } },
      recommendation: { app: stocked, path: '/recommendation', params: { im_name: 'red' } },
      colorsearch: { app: stocked, path: '/colorsearch', params: { color: 'ff0000' } },
      textsearch: { app: reading, path: '/textsearch', params: { q: 'red' } },
      textsearchByForm: { app: reading, path: '/textsearch', params: { q: 'red' } },
      uploadsearch: { app: stocked, path: '/uploadsearch', params: { im_url: hen } },
      discoversearch: { app: stocked, path: '/discoversearch', params: { im_url: hen } },
      uploadsearchByReference: { app: stocked, path: '/uploadsearch', params: { im_url: hen } },
      discoversearchByReference: { app: stocked, path: '/discoversearch', params: { im_url: hen } },
      insertStatus: { app: stocked, path: `/insert/status/${transId}`, params: {} },
      image: { app: stocked, path: '/image', params: { im_name: 'red' } },
    };
  });

  it('is an OpenAPI 3.1 document whose references all resolve', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.title).toBeTruthy();
    expect(document.info.version).toBeTruthy();
    expect(document.servers).toEqual([{ url: 'https://search.test' }]);
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['adminToken', 'appKey', 'basicAuth']);
    const ids = operations().map((entry) => entry.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);

    for (const { path, method, operation } of operations()) {
      expect(HTTP_METHODS, path).toContain(method);
      for (const requirement of operation.security) {
        for (const scheme of Object.keys(requirement)) {
          expect(document.components.securitySchemes, path).toHaveProperty(scheme);
        }
      }
      const declared = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path');
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      expect(declared.map(({ name }) => name).sort(), path).toEqual(templated.sort());
      expect(Object.keys(operation.responses).length, path).toBeGreaterThan(0);
    }
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/(\w+)\/([^"]+)"/g)];
    expect(refs.length).toBeGreaterThan(0);
    for (const [, kind, name] of refs) expect(document.components, `${kind}/${name}`).toHaveProperty([kind!, name!]);
  });

  it('documents every route of the app, and every documented path answers', async () => {
    const routes = app.routes
      .filter((route) => route.method !== 'ALL')
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`);
    const documented = operations().map(({ path, method }) => `${method} ${path}`);
    expect([...new Set(routes)].sort()).toEqual(documented.sort());

    for (const { path, method } of operations()) {
      // Not followed: `GET /` redirects to the console, static assets the test Worker does not serve.
      const response = await call(path.replace(/\{\w+\}/g, '1'), { method: method.toUpperCase(), redirect: 'manual' });
      const body = response.headers.get('content-type')?.includes('json') ? await response.json<Body>() : null;
      expect(response.status, `${method} ${path}`).not.toBe(404);
      expect(body?.error ?? [], `${method} ${path}`).not.toContain('No such endpoint.');
    }
  });

  it('documents the bounds each endpoint enforces: accepted at them, refused past them with the message', async () => {
    for (const operationId of ['search', 'recommendation', 'colorsearch', ...UPLOAD_SEARCHES, ...TEXT_SEARCHES, 'insertStatus']) {
      const base = checking(operationId);
      const numbers = documentedParameters(operationOf(operationId).operation).filter(
        ({ schema }) => (schema.type === 'integer' || schema.type === 'number') && schema.minimum !== undefined,
      );
      expect(numbers.length, operationId).toBeGreaterThan(0);
      for (const { name, schema } of numbers) {
        const { minimum: min, maximum: max } = schema as Required<Schema>;
        const integral = schema.type === 'integer';
        const step = integral ? 1 : 0.1;
        const range = integral ? `${min} and ${max}` : `${min.toFixed(1)} and ${max.toFixed(1)}`;
        const companions = COMPANIONS[name] ?? {};
        for (const value of [min, max].filter((bound) => bound !== undefined)) {
          const answer = await callWith(operationId, { ...companions, [name]: String(value) }, { base });
          expect(passedChecks(answer), `${operationId} ${name}=${value}: ${JSON.stringify(answer.body)}`).toBe(true);
        }
        for (const value of [min - step, ...(max === undefined ? [] : [max + step])]) {
          const { status, body } = await callWith(operationId, { ...companions, [name]: String(value) }, { base });
          expect([status, body.status], `${operationId} ${name}=${value}`).toEqual([200, 'fail']);
          if (max !== undefined) expect(errorMessage(body)).toBe(`${name} must be between ${range}.`);
        }
      }
    }
  });

  it('documents the booleans, choices and required parameters each endpoint checks', async () => {
    for (const operationId of ['search', 'recommendation', 'colorsearch', ...UPLOAD_SEARCHES, ...TEXT_SEARCHES, 'image']) {
      const base = checking(operationId);
      const answer = async (params: Record<string, string>) => {
        const { body } = await callWith(operationId, params, { base });
        return [body.status, errorMessage(body)];
      };
      const accepted = async (params: Record<string, string>) => passedChecks(await callWith(operationId, params, { base }));
      for (const { name, schema, required } of documentedParameters(operationOf(operationId).operation)) {
        const companions = COMPANIONS[name] ?? {};
        if (schema.type === 'boolean') {
          expect(await accepted({ ...companions, [name]: 'True' }), name).toBe(true);
          expect(await answer({ ...companions, [name]: 'maybe' })).toEqual(['fail', `${name} must be true or false.`]);
        }
        for (const value of schema.enum ?? []) expect(await accepted({ [name]: value }), `${name}=${value}`).toBe(true);
        if (schema.enum) {
          expect(await answer({ [name]: 'neither' })).toEqual(['fail', `${name} must be ${schema.enum.join(' or ')}.`]);
        }
        if (required) {
          const { body } = await callWith(operationId, {}, { base, omit: [name] });
          expect(body.status, `${operationId} without ${name}`).toBe('fail');
        }
      }
    }
  });

  it('answers the documented defaults and the documented response bodies', async () => {
    const schemas: Record<string, z.ZodType> = {
      search: responses.searchResponse,
      recommendation: responses.searchResponse,
      uploadsearchByReference: responses.uploadSearchResponse,
      discoversearchByReference: responses.discoverSearchResponse,
      colorsearch: responses.colorSearchResponse,
      textsearch: responses.textSearchResponse,
      textsearchByForm: responses.textSearchResponse,
      uploadsearch: responses.uploadSearchResponse,
      discoversearch: responses.discoverSearchResponse,
      insertStatus: responses.insertStatusResponse,
    };
    for (const [operationId, schema] of Object.entries(schemas)) {
      const { status, body } = await callWith(operationId, {});
      expect(status, JSON.stringify(body)).toBe(200);
      schema.parse(body);
      // A parameter the response echoes (page, limit, result_limit, detection_limit, error_page, error_limit).
      const echoed = operationId === 'insertStatus' ? (body.result as Record<string, unknown>[])[0]! : body;
      const defaults = documentedParameters(operationOf(operationId).operation).filter(
        ({ name, schema }) => name in echoed && schema.default !== undefined,
      );
      expect(defaults.length, operationId).toBeGreaterThan(0);
      for (const { name, schema } of defaults) expect(echoed[name], `${operationId} ${name}`).toEqual(schema.default);
    }
    const { body } = await callWith('search', {});
    expect((body.result as object[])[0]).not.toHaveProperty('score');
    // Failures: HTTP 200 and the endpoint's failure body, as the document says.
    const failures: [string, Record<string, string>, z.ZodType][] = [
      ['search', { page: '0' }, responses.searchFailure],
      ['recommendation', { im_name: 'nothing' }, responses.searchFailure],
      ['colorsearch', { color: 'nothing' }, responses.searchFailure],
      ['textsearch', { q: '' }, responses.searchFailure],
      ['uploadsearch', { im_id: 'nothing' }, responses.searchFailure],
      ['discoversearchByReference', { result_limit: '0' }, responses.discoverSearchFailure],
      ['insertStatus', { error_limit: '0' }, responses.insertStatusFailure],
    ];
    for (const [operationId, params, schema] of failures) {
      const { status, body } = await callWith(operationId, params);
      expect([status, body.status], operationId).toEqual([200, 'fail']);
      schema.parse(body);
    }
    const remove = await call('/remove', { method: 'POST', headers: basicAuth(stocked), body: new URLSearchParams({ 'im_name[0]': 'nothing' }) });
    responses.dataFailure.parse(await remove.json());
  });

  it('renders every documented path and schema on a page that loads nothing', async () => {
    const response = await call('/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await response.text();
    for (const { path, operation } of operations()) {
      expect(html, path).toContain(`<code>${path}</code>`);
      expect(html, path).toContain(`id="${operation.operationId}"`);
      for (const { name } of documentedParameters(operation)) {
        expect(html, `${path} ${name}`).toContain(`<code>${name}</code>`);
      }
    }
    for (const name of Object.keys(document.components.schemas)) expect(html).toContain(`id="schema-${name}"`);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|\ssrc=|url\(/i);
  });
});
