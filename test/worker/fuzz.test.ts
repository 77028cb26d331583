import { env } from 'cloudflare:test';
import fc from 'fast-check';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  adminHeaders,
  basicAuth,
  call,
  createApp,
  fixtureUrl,
  imageBytes,
  insert,
  uploadsearch,
  waitForTransaction,
  type Credentials,
  allDatabases,
  databaseNames,
} from './helpers';

/**
 * Property-based fuzzing of every endpoint (src/app.ts, src/routes/*): parameter sets of known names with random and
 * adversarial values, unknown names and repeats, sent as a query string, an urlencoded or a multipart body (or a body
 * whose content type lies), with good, wrong and no credentials. Whatever comes in:
 * - no 5xx, and the body is JSON in the endpoint's envelope: the API endpoints answer HTTP 200 even when they fail,
 *   with the endpoint's empty answer; the admin API and the console's image bytes fail with their HTTP status;
 *   errors are strings, but for the numbered data errors of spec 7.2 (`{error_code, error_message}` entries of the
 *   data endpoints); search bodies carry the reqid; a busy answer, and only it, carries `Retry-After`;
 * - a rejected call (`status: "fail"`) changes nothing in D1 (every row of every table) or R2 (every object).
 * Seeded and bounded: most generated calls are invalid or cheap; the valid upload searches reach the real inference
 * service. A failure reports its seed and path, so it can be replayed.
 */

const SEED = 20_260_915;
const RUNS = { seed: SEED, numRuns: 50, endOnFailure: true };
const ANCHOR = 'fuzz-anchor-hen';

type Param = [string, string | Blob];
type Auth = 'none' | 'basic' | 'wrong-secret' | 'app-key' | 'wrong-app-key' | 'garbage';
type Encoding = 'query' | 'urlencoded' | 'multipart' | 'multipart-as-urlencoded' | 'urlencoded-as-multipart';
type Call = { path: string; method: 'GET' | 'POST'; params: Param[]; encoding: Encoding; auth: Auth };

/** What the fuzzer needs from the setup: the fuzzed application, its transaction and query image, bytes to upload. */
type World = {
  app: Credentials;
  adminTarget: Credentials;
  transId: number;
  imId: string;
  realImage: Blob;
  headerOnlyPng: Blob;
};

// ---- values -------------------------------------------------------------------------------------------------

/** Mostly a good value, else a hostile one: a call of a few parameters then passes now and then. */
const mostly = <T>(good: fc.Arbitrary<T>, hostile: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ weight: 3, arbitrary: good }, { weight: 1, arbitrary: hostile });

const junk: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom('', ' ', '\u0000', '%', '%zz', '&', '=', '[]', '\uFFFD', '😀', 'null', '{}', '-', 'a'.repeat(5001)),
);

const NOT_INTEGERS = ['1e30', '9007199254740993', '-1', '0', '1.5', '0x10', '1e3', ' 5 ', '', '+7', 'NaN', '١٠'];
const integerText = (good: fc.Arbitrary<number>): fc.Arbitrary<string> =>
  mostly(
    good.map(String),
    fc.oneof(
      fc.constantFrom(...NOT_INTEGERS),
      fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
      fc.double().map(String),
      junk,
    ),
  );
const smallInteger = integerText(fc.integer({ min: 1, max: 20 }));
const booleanText = mostly(
  fc.constantFrom('true', 'false', 'True', 'False', '1', '0'),
  fc.oneof(fc.constantFrom('', 'yes', 'TRUE', ' true'), junk),
);
const unitText = mostly(
  fc.double({ min: 0, max: 1, noNaN: true }).map(String),
  fc.oneof(
    fc.double({ min: -0.5, max: 1.5, noNaN: true }).map(String),
    fc.constantFrom('NaN', '1e-400', '.5', '0.', '', '-0', '0x1', '1e0'),
    junk,
  ),
);

const field = mostly(fc.constantFrom('tag', 'brand', 'price', 'count', 'hidden', 'unknown'), junk);
/** Text queries from the filter language's own characters, so that most of them get some way into the parser. */
const FILTER_PIECES = ['(', ')', '"', '\\', ' ', ',', ':', 'AND', 'OR', 'NOT', 'not', 'a', 'Red', '-2.5', '，', '中'];
const queryText = fc.array(fc.constantFrom(...FILTER_PIECES), { maxLength: 30 }).map((parts) => parts.join(''));
const GOOD_FILTERS = ['brand:b', 'price:1,2', 'count:3', 'tag:red OR (a AND NOT b)', 'unknown:x', 'brand:(b OR "c d")'];
const fqText = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...GOOD_FILTERS) },
  { weight: 6, arbitrary: fc.tuple(field, queryText).map(([name, value]) => `${name}:${value}`) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 3000 }).map((n) => `tag:${'('.repeat(n)}a${')'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1990, max: 2100 }).map((length) => `tag:${'a '.repeat(length / 2)}`) },
  { weight: 1, arbitrary: junk },
);
const fieldList = fc.oneof(fc.array(field, { maxLength: 4 }).map((names) => names.join(',')), fc.constant('*'));
const sortBy = mostly(
  fc.tuple(field, fc.constantFrom('asc', 'desc', 'DESC', 'up', '')).map(([name, direction]) => `${name}:${direction}`),
  junk,
);
const hex6 = fc.stringMatching(/^[0-9a-fA-F]{6}$/);
const colorText = mostly(
  fc.oneof(hex6, fc.tuple(hex6, fc.integer({ min: 1, max: 100 })).map(([hex, ratio]) => `${hex}:${ratio}`)),
  fc.oneof(
    fc.tuple(hex6, integerText(fc.integer({ min: -5, max: 200 }))).map(([hex, ratio]) => `${hex}:${ratio}`),
    fc.array(hex6, { minLength: 2, maxLength: 8 }).map((hexes) => hexes.join(',')),
    junk,
  ),
);
const coordinate = integerText(fc.nat({ max: 400 }));
const boxText = mostly(fc.array(coordinate, { minLength: 4, maxLength: 4 }).map((parts) => parts.join(',')), junk);
const pointText = mostly(fc.array(coordinate, { minLength: 2, maxLength: 2 }).map((parts) => parts.join(',')), junk);
/** Names that are never the anchor image's, so no generated call removes or replaces it. */
const imName = mostly(
  fc.constantFrom('missing', 'a:b.c-d_e', 'fuzzed-1'),
  fc.oneof(fc.constantFrom('', 'n'.repeat(129), 'bad name'), junk),
).filter((name) => name !== ANCHOR);
/** URLs that fail at once (refused, unreachable, not found): an accepted insert settles within a second or two. */
const BAD_URLS = ['', 'not a url', 'ftp://127.0.0.1/x', 'javascript:1', 'http://127.0.0.1:1/x', 'http://10.0.0.1/x'];
const imUrl = fc.oneof(fc.constantFrom(...BAD_URLS), fc.constant(null).map(() => fixtureUrl('/status/404')), junk);

// ---- endpoints ----------------------------------------------------------------------------------------------

type Values = Record<string, fc.Arbitrary<string | Blob>>;
/** How an endpoint answers, whatever the call. */
type Answers = {
  name: string;
  /** Failures answered with their HTTP status (admin API, console image) rather than 200. */
  httpStatuses?: boolean;
  /** What a failed answer carries besides status, method and error. */
  failureFields?: Record<string, unknown>;
  /** Its errors may be numbered data errors of spec 7.2, `{error_code, error_message}` objects. */
  dataErrors?: boolean;
  /** Its bodies carry the reqid of X-Log-ID. */
  reqid?: boolean;
  /** Answers stored bytes, not JSON, when it succeeds. */
  binary?: boolean;
};
type Endpoint = Answers & {
  method: 'GET' | 'POST';
  path: (world: World) => fc.Arbitrary<string>;
  /** Parameters a valid call needs: each is left out now and then. */
  required: (world: World) => fc.Arbitrary<Param>[];
  optional: (world: World) => Values;
  /** Parameters whose names are generated too. */
  named?: fc.Arbitrary<Param>;
};

/** A failed search answers an empty page. */
const EMPTY_PAGE = { page: expect.any(Number), limit: expect.any(Number), total: 0, result: [] };

const param = (name: string, value: fc.Arbitrary<string | Blob>): fc.Arbitrary<Param> =>
  value.map((text): Param => [name, text]);

const advanced: Values = {
  page: integerText(fc.integer({ min: 1, max: 3 })),
  limit: smallInteger,
  fq: fqText,
  fl: fieldList,
  get_all_fl: booleanText,
  score: booleanText,
  score_min: unitText,
  score_max: unitText,
  dedup: booleanText,
  dedup_score_threshold: unitText,
  facets: fieldList,
  facets_limit: smallInteger,
  facets_show_count: booleanText,
  group_by: field,
  group_limit: smallInteger,
  sort_by: sortBy,
  qinfo: booleanText,
};

const imageFile = (world: World): fc.Arbitrary<string | Blob> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => new Blob([bytes])) },
    { weight: 2, arbitrary: fc.constant(world.headerOnlyPng) },
    { weight: 1, arbitrary: fc.constant(world.realImage) },
    { weight: 1, arbitrary: junk },
  );
/** The one image source of an upload search: the stored im_id most often, so that some calls pass. */
const imageSource = (world: World): fc.Arbitrary<Param> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant<Param>(['im_id', world.imId]) },
    { weight: 2, arbitrary: param('image', imageFile(world)) },
    { weight: 1, arbitrary: param('im_url', imUrl) },
    { weight: 1, arbitrary: param('im_id', junk) },
  );
const uploadOptions = (world: World): Values => ({
  ...advanced,
  image: imageFile(world),
  im_url: imUrl,
  im_id: junk,
  box: boxText,
  detection: mostly(fc.constantFrom('all', 'null', ' ', 'person', 'bird', 'Bird'), junk),
});

const insertIndex = mostly(fc.nat({ max: 3 }).map(String), fc.constantFrom('01', '-1', '1e2', '9'.repeat(20), ''));

const ENDPOINTS: Endpoint[] = [
  {
    name: 'insert',
    failureFields: { total: 0, result: [] },
    dataErrors: true,
    method: 'POST',
    path: () => fc.constant('/insert'),
    required: () => [param('im_name[0]', imName), param('im_url[0]', imUrl)],
    optional: () => ({ 'price[0]': unitText, 'count[0]': smallInteger, 'tag[0]': junk, im_name: imName }),
    named: fc
      .tuple(fc.constantFrom('im_name', 'im_url', 'brand', 'price'), insertIndex, fc.oneof(imName, imUrl, junk))
      .map(([key, index, value]): Param => [`${key}[${index}]`, value]),
  },
  {
    name: 'insert/status',
    failureFields: { result: [] },
    dataErrors: true,
    method: 'GET',
    path: (world) =>
      mostly(fc.constant(String(world.transId)), fc.oneof(integerText(fc.nat()), junk)).map(
        (id) => `/insert/status/${encodeURIComponent(id)}`,
      ),
    required: () => [],
    optional: () => ({ error_page: integerText(fc.integer({ min: 1, max: 3 })), error_limit: smallInteger }),
  },
  {
    name: 'remove',
    failureFields: { total: 0, result: [] },
    dataErrors: true,
    method: 'POST',
    path: () => fc.constant('/remove'),
    required: () => [param('im_name[0]', imName)],
    optional: () => ({ 'im_name[1]': imName, 'im_name[01]': imName, 'im_name[-1]': imName, im_name: imName }),
  },
  {
    name: 'search',
    failureFields: EMPTY_PAGE,
    reqid: true,
    method: 'GET',
    path: () => fc.constant('/search'),
    required: () => [param('im_name', mostly(fc.constant(ANCHOR), imName))],
    optional: () => advanced,
  },
  {
    name: 'uploadsearch',
    failureFields: EMPTY_PAGE,
    reqid: true,
    method: 'POST',
    path: () => fc.constant('/uploadsearch'),
    required: (world) => [imageSource(world)],
    optional: uploadOptions,
  },
  {
    name: 'discoversearch',
    failureFields: { page: expect.any(Number), result_limit: expect.any(Number), objects: [] },
    reqid: true,
    method: 'POST',
    path: () => fc.constant('/discoversearch'),
    required: (world) => [imageSource(world)],
    optional: (world) => ({
      ...uploadOptions(world),
      result_limit: smallInteger,
      detection_limit: integerText(fc.integer({ min: 1, max: 30 })),
      detection_sensitivity: mostly(fc.constantFrom('low', 'high'), fc.oneof(fc.constant('LOW'), junk)),
      point: pointText,
    }),
  },
  {
    name: 'colorsearch',
    failureFields: EMPTY_PAGE,
    reqid: true,
    method: 'GET',
    path: () => fc.constant('/colorsearch'),
    required: () => [param('color', colorText)],
    optional: () => advanced,
  },
  {
    name: 'image',
    httpStatuses: true,
    method: 'GET',
    path: () => fc.constant('/image'),
    required: () => [param('im_name', mostly(fc.constant(ANCHOR), imName))],
    optional: () => ({ im_name: imName }),
    binary: true,
  },
];

/**
 * The required parameters (each left out one time in six), then a few optional ones, unknown names and generated
 * names; names are drawn freely, so some come twice.
 */
function paramsOf(endpoint: Endpoint, world: World): fc.Arbitrary<Param[]> {
  const optional = endpoint.optional(world);
  const known = fc.constantFrom(...Object.keys(optional)).chain((name) => param(name, optional[name]!));
  const unknown = fc.tuple(junk, junk).map(([name, value]): Param => [name, value]);
  const named = endpoint.named ? [{ weight: 3, arbitrary: endpoint.named }] : [];
  const extra = fc.oneof({ weight: 8, arbitrary: known }, { weight: 1, arbitrary: unknown }, ...named);
  const required = endpoint.required(world).map((given) => fc.option(given, { freq: 5, nil: undefined }));
  return fc
    .tuple(fc.tuple(...required), fc.array(extra, { maxLength: 4 }))
    .map(([given, rest]) => [...given.filter((entry): entry is Param => entry !== undefined), ...rest]);
}

/** The admin API (docs/decisions.md), on an application of its own: JSON bodies near the valid ones, and garbage. */
type AdminCall = { method: string; path: string; body: string | undefined; contentType: string; token: string };

const schemaField = fc.record(
  {
    name: fc.oneof(field, fc.constantFrom('im_name', 'im_url', 'a'.repeat(65))),
    type: fc.oneof(fc.constantFrom('string', 'int', 'float', 'text'), junk),
    searchable: fc.oneof(fc.boolean(), junk),
  },
  { requiredKeys: ['name', 'type'] },
);
const limitValue = fc.oneof(fc.integer({ min: -2, max: 10 }), fc.double(), fc.constantFrom(null, 2 ** 53), junk);
const adminBody = fc
  .oneof(
    fc.record({ name: fc.oneof(fc.string({ maxLength: 220 }), junk, fc.integer()) }, { requiredKeys: [] }),
    fc.record({ fields: fc.array(schemaField, { maxLength: 32 }) }, { requiredKeys: [] }),
    fc.record(
      { image_limit: limitValue, pending_limit: limitValue, text_default_operator: mostly(fc.constant('OR'), junk) },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  )
  .map((value) => JSON.stringify(value));
const ADMIN_TYPES = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'];

const adminCalls = (targetAppId: string): fc.Arbitrary<AdminCall> =>
  fc
    .record({
      route: fc.constantFrom('create', 'get', 'settings', 'schema'),
      appId: mostly(fc.constant(targetAppId), junk),
      body: mostly(adminBody, fc.oneof(junk, fc.constant(undefined))),
      contentType: mostly(fc.constant('application/json'), fc.constantFrom(...ADMIN_TYPES)),
      // Header values are visible ASCII: a client cannot send anything else.
      token: mostly(fc.constant('test-admin-token'), fc.stringMatching(/^[!-~]{0,40}$/)),
    })
    .map(({ route, appId, body, contentType, token }): AdminCall => {
      const appPath = `/admin/apps/${encodeURIComponent(appId)}`;
      const [method, path] = {
        create: ['POST', '/admin/apps'],
        get: ['GET', appPath],
        settings: ['PATCH', appPath],
        schema: ['PUT', `${appPath}/schema`],
      }[route] as [string, string];
      return { method, path, body: method === 'GET' ? undefined : body, contentType, token };
    });

// ---- requests -----------------------------------------------------------------------------------------------

const textOf = (value: string | Blob): string => (typeof value === 'string' ? value : 'not-a-file');

async function send(world: World, request: Call): Promise<Response> {
  const params = [...request.params];
  const headers: Record<string, string> = {};
  if (request.auth === 'basic') Object.assign(headers, basicAuth(world.app));
  if (request.auth === 'wrong-secret') Object.assign(headers, basicAuth({ ...world.app, secret_key: 'wrong' }));
  if (request.auth === 'garbage') headers.authorization = 'Basic !!!';
  if (request.auth === 'app-key') params.push(['access_key', world.app.app_key]);
  if (request.auth === 'wrong-app-key') params.push(['access_key', `${world.app.app_key}x`]);

  if (request.method === 'GET' || request.encoding === 'query') {
    const query = new URLSearchParams(params.map(([name, value]) => [name, textOf(value)]));
    return call(`${request.path}${params.length > 0 ? `?${query}` : ''}`, { method: request.method, headers });
  }
  let body: BodyInit;
  if (request.encoding === 'multipart' || request.encoding === 'multipart-as-urlencoded') {
    const form = new FormData();
    for (const [name, value] of params) {
      if (typeof value === 'string') form.append(name, value);
      else form.append(name, value, 'upload.png');
    }
    const encoded = new Response(form);
    body = await encoded.arrayBuffer();
    const lies = request.encoding === 'multipart-as-urlencoded';
    headers['content-type'] = lies ? 'application/x-www-form-urlencoded' : encoded.headers.get('content-type')!;
  } else {
    body = new URLSearchParams(params.map(([name, value]) => [name, textOf(value)])).toString();
    const lies = request.encoding === 'urlencoded-as-multipart';
    headers['content-type'] = lies ? 'multipart/form-data; boundary=----fuzz' : 'application/x-www-form-urlencoded';
  }
  return call(request.path, { method: 'POST', headers, body });
}

const encodings = (method: 'GET' | 'POST'): fc.Arbitrary<Encoding> =>
  method === 'GET'
    ? fc.constant('query')
    : mostly(
        fc.constantFrom<Encoding>('urlencoded', 'multipart'),
        fc.constantFrom<Encoding>('query', 'multipart-as-urlencoded', 'urlencoded-as-multipart'),
      );
const auths = mostly(
  fc.constantFrom<Auth>('basic', 'basic', 'app-key'),
  fc.constantFrom<Auth>('none', 'wrong-secret', 'wrong-app-key', 'garbage'),
);

// ---- what must hold -----------------------------------------------------------------------------------------

/** Every row of each D1 table, and every R2 object, as text: compared before and after each rejected call. */
async function storageState(): Promise<Map<string, string>> {
  const state = new Map<string, string>();
  for (const [k, db] of allDatabases().entries()) {
    const { results: tables } = await db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
      .all<{ name: string }>();
    const rows = await db.batch(tables.map(({ name }) => db.prepare(`SELECT * FROM "${name}"`)));
    for (const [index, { name }] of tables.entries()) state.set(`D1 ${databaseNames()[k]} ${name}`, JSON.stringify(rows[index]!.results));
  }
  const objects: string[] = [];
  let cursor: string | undefined;
  do {
    const listed = await env.BLOBS.list(cursor ? { cursor } : {});
    objects.push(...listed.objects.map((object) => `${object.key} ${object.size} ${object.etag}`));
    cursor = listed.truncated ? listed.cursor : undefined;
  } while (cursor);
  return state.set('R2 objects', JSON.stringify(objects));
}

/** What differs between two states, one line per table or bucket, shortened for a failure message. */
const changes = (before: Map<string, string>, after: Map<string, string>): string[] =>
  [...new Set([...before.keys(), ...after.keys()])]
    .filter((key) => before.get(key) !== after.get(key))
    .map((key) => `${key}: ${before.get(key)?.slice(-150)} -> ${after.get(key)?.slice(-150)}`);

type Body = { status?: unknown; method?: unknown; error?: unknown; reqid?: unknown; trans_id?: unknown };

/** The numbered data errors of spec 7.2: the only errors that are objects. */
const DATA_ERROR_CODES = [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 201, 202, 203];
const BUSY = 'System busy, please try again later.';

/**
 * The envelope of spec section 7 and docs/decisions.md. The API endpoints answer every envelope with HTTP 200, a
 * failure too; the admin API and the console's image endpoint, which no official client calls, fail with their HTTP
 * status. The admin API is no part of the spec: its answers carry the envelope when they fail, and only
 * `status: "OK"` when they do not.
 */
function expectEnvelope(response: Response, body: Body, endpoint: Answers): void {
  const context = JSON.stringify(body).slice(0, 500);
  expect(response.status, context).toBeLessThan(500);
  expect(response.headers.get('content-type'), context).toMatch(/^application\/json/);
  expect(['OK', 'warning', 'fail'], context).toContain(body.status);
  const failed = body.status === 'fail';
  if (response.status === 404 && body.method === '') {
    expect(body, context).toEqual({ status: 'fail', method: '', error: ['No such endpoint.'] });
    return;
  }
  if (endpoint.httpStatuses) expect(failed, context).toBe(response.status >= 400);
  else expect(response.status, context).toBe(200);
  if (endpoint.name === 'admin' && !failed) return;
  expect(Array.isArray(body.error), context).toBe(true);
  const errors = body.error as unknown[];
  if (failed) expect(errors.length, context).toBeGreaterThan(0);
  expect(body.method, context).toBe(endpoint.name);
  for (const entry of errors) {
    if (typeof entry === 'string') continue;
    expect(endpoint.dataErrors, `an error object on ${endpoint.name}: ${context}`).toBe(true);
    expect(entry, context).toMatchObject({ error_code: expect.any(Number), error_message: expect.any(String) });
    expect(DATA_ERROR_CODES, context).toContain((entry as { error_code: number }).error_code);
  }
  if (failed && endpoint.failureFields) expect(body, context).toMatchObject(endpoint.failureFields);
  expect(response.headers.get('retry-after'), context).toBe(errors.includes(BUSY) ? '5' : null);
  if (endpoint.reqid) {
    expect(body.reqid, context).toMatch(/^[0-9a-f]{32}$/);
    expect(response.headers.get('x-log-id'), context).toBe(body.reqid);
  }
}

describe('fuzzing every endpoint', () => {
  let world: World;
  let state: Map<string, string>;

  beforeAll(async () => {
    const app = await createApp('fuzz', [
      { name: 'tag', type: 'text', searchable: true },
      { name: 'brand', type: 'string', searchable: true },
      { name: 'price', type: 'float', searchable: true },
      { name: 'count', type: 'int', searchable: true },
      { name: 'hidden', type: 'string', searchable: false },
    ]);
    const realImage = await imageBytes('/images/animals_birds_hen.png');
    const anchor = { im_name: ANCHOR, im_url: fixtureUrl('/images/animals_birds_hen.png'), brand: 'b', price: '1.5' };
    const { trans_id: transId } = await (await insert(app, [anchor])).json<{ trans_id: number }>();
    await waitForTransaction(app, transId);
    const { body } = await uploadsearch(app, { image: realImage, limit: '1' });
    const headerOnlyPng = await imageBytes('/png-header/300x300');
    const adminTarget = await createApp('fuzz-admin-target');
    world = { app, adminTarget, transId, imId: body.im_id, realImage, headerOnlyPng };
  });

  beforeEach(async () => {
    state = await storageState();
  });

  type Outcome = 'accepted' | 'rejected';

  /**
   * One call: the envelope holds (or, for /image, the stored bytes come back), and a rejected call changed nothing.
   * After an accepted call the state moves on (an accepted insert is let settle first, so that its consumer changes
   * nothing during a later call).
   */
  async function check(endpoint: Answers, response: Response): Promise<Outcome> {
    if (endpoint.binary && response.status === 200) {
      expect(response.headers.get('content-type')).toMatch(/^image\//);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
      return 'accepted';
    }
    const text = await response.text();
    let body: Body;
    try {
      body = JSON.parse(text) as Body;
    } catch {
      throw new Error(`${response.status} answer is not JSON: ${text.slice(0, 200)}`);
    }
    expectEnvelope(response, body, endpoint);
    if (body.status === 'fail') {
      const message = `a rejected call changed storage: ${JSON.stringify(body).slice(0, 300)}`;
      expect(changes(state, await storageState()), message).toEqual([]);
      return 'rejected';
    }
    const transId = endpoint.name === 'insert' ? body.trans_id : undefined;
    if (typeof transId === 'number') await waitForTransaction(world.app, transId);
    state = await storageState();
    return 'accepted';
  }

  it.each(ENDPOINTS.map((endpoint) => [endpoint.name, endpoint] as const))('%s', async (_, endpoint) => {
    const calls = fc.record({
      path: endpoint.path(world),
      method: fc.constant(endpoint.method),
      params: paramsOf(endpoint, world),
      encoding: encodings(endpoint.method),
      auth: auths,
    });
    const outcomes = { accepted: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(calls, async (request) => {
        outcomes[await check(endpoint, await send(world, request))]++;
      }),
      RUNS,
    );
    // The generators reach both sides (no image is ever there to remove, so /remove only fails).
    expect(outcomes.rejected).toBeGreaterThan(0);
    if (endpoint.name !== 'remove') expect(outcomes.accepted).toBeGreaterThan(0);
  });

  it('admin', async () => {
    const outcomes = { accepted: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(adminCalls(world.adminTarget.app_id), async ({ method, path, body, contentType, token }) => {
        const headers = { ...adminHeaders, authorization: `Bearer ${token}`, 'content-type': contentType };
        const response = await call(path, { method, headers, ...(body === undefined ? {} : { body }) });
        outcomes[await check({ name: 'admin', httpStatuses: true }, response)]++;
      }),
      RUNS,
    );
    expect(outcomes.accepted).toBeGreaterThan(0);
    expect(outcomes.rejected).toBeGreaterThan(0);
  });
});
