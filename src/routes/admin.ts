import type { Context, Handler } from 'hono';
import type { z } from 'zod';
import { APP_PATH, createAppBody, moveBody, productTypesBody, reindexBody, schemaBody, settingsBody, tuneBody } from '../admin/bodies';
import { describeTuning, tuningClasses } from '../admin/tuning';
import { productTypesProblem } from '../admin/product-types';
import { newAppKeys } from '../auth/keys';
import type { AppEnv, Env } from '../env';
import { invalidParameter, ApiError } from '../http/envelope';
import { httpErrors, route, type RouteDeclaration } from '../http/route';
import * as responses from '../openapi/responses';
import { sendJobMessage } from '../ingest/message';
import { createApp, getApp, getSchema, replaceSchema, setProductTypes, updateSettings, type AppRecord } from '../storage/apps';
import { defaultEmbedModel, embedModelIndexesOf, embedModels, isEmbedModel } from '../storage/embed-models';
import { embedModelProblem } from '../ingest/reindex';
import { inference } from '../ports/inference';
import { InferenceUnavailableError } from '../ports/inference/types';
import { getReindex, imagesInModel, reindexUnderWay, resumeReindex, startReindex } from '../storage/reindexes';
import { getTuning, startTuning, TUNING_UNDER_WAY, untune } from '../storage/tunings';
import { appCacheTtlMs } from '../storage/app-cache';
import { groupsOf, indexFills, placeApplication, placeGroups, PlacementRefused } from '../storage/placement';
import { catalogDatabase, databaseFills, databaseNames, placeNewApplication } from '../storage/databases';
import { fence, getMove, MOVE_UNDER_WAY, startMove, type Move } from '../storage/moves';
import { formatTimestamp } from '../time';

/** The database an application is moving to while its rows are copied: it is not there yet. */
const movingTo = (move: Move | null): string | undefined => (move?.state === 'copying' ? move.toDatabase : undefined);

const describe = (app: AppRecord, moving?: string) => ({
  app_id: app.id,
  name: app.name,
  access_key: app.accessKey,
  created_at: app.createdAt,
  image_limit: app.limits.imageLimit,
  pending_limit: app.limits.pendingLimit,
  searches_per_minute: app.limits.searchesPerMinute,
  upload_bytes_per_minute: app.limits.uploadBytesPerMinute,
  text_default_operator: app.textDefaultOperator,
  embed_model: app.embedModel,
  product_types: app.productTypes,
  tuning: app.tuning,
  placement: { database: app.database, indexes: app.placement ?? {}, ...(moving && { moving }) },
});

/** A placement that finds every index of a group (or every database) full answers 507, naming the setting to add one to. */
const placing = <T>(placement: Promise<T>): Promise<T> =>
  placement.catch((error: unknown) => {
    if (error instanceof PlacementRefused) throw new ApiError(507, error.message);
    throw error;
  });

async function readJson<T>(c: Context<AppEnv>, schema: z.ZodType<T>): Promise<T> {
  const body: unknown = await c.req.json().catch(() => {
    throw invalidParameter('The request body must be JSON.');
  });
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidParameter(`${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

const createAppHandler: Handler<AppEnv> = async (c) => {
  const { name, embed_model: embedModel = defaultEmbedModel(c.env) } = await readJson(c, createAppBody);
  requireEmbedModel(c.env, embedModel);
  // The secret key and the app key are answered this once: only their digests are kept.
  const { credentials, stored } = await newAppKeys(name);
  const [placement, database] = await Promise.all([placing(placeGroups(c.env, {}, groupsOf(c.env, embedModel), 0)), placeNewApplication(c.env)]);
  if (database === null) throw new ApiError(507, 'Every D1 database is full: add one to D1_DATABASES.');
  await createApp(c.env, stored, embedModel, placement, database);
  return c.json({ status: 'OK', ...credentials, name }, 201);
};

function requireEmbedModel(env: Env, model: string): void {
  if (!isEmbedModel(env, model)) throw invalidParameter(`embed_model: ${model} is not one of ${[...embedModels(env).keys()].join(', ')}`);
}

/** The routes under one application (Hono's form of their path, for the `app_id` parameter). */
type AppPath = '/admin/apps/:app_id';

async function appOrNotFound(db: D1Database, appId: string): Promise<AppRecord> {
  const app = await getApp(db, appId);
  if (!app) throw new ApiError(404, 'App not found.');
  return app;
}

const getAppHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const [schema, move] = await Promise.all([getSchema(c.env, app), getMove(c.env.DB, app.id)]);
  const fields = schema.map(({ name, type, searchable }) => ({ name, type, searchable }));
  return c.json({ status: 'OK', ...describe(app, movingTo(move)), schema: { fields } });
};

/**
 * Operator settings: `image_limit` (collection size), `pending_limit` (images waiting to be processed),
 * `searches_per_minute` and `upload_bytes_per_minute` (calls of the searches and `/image`, and query-image bytes a
 * minute: src/search/quota.ts), null lifting one; `text_default_operator` (AND or OR) between adjacent words of a text `fq`.
 */
const updateAppHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const body = await readJson(c, settingsBody);
  await updateSettings(c.env.DB, app.id, {
    imageLimit: body.image_limit,
    pendingLimit: body.pending_limit,
    searchesPerMinute: body.searches_per_minute,
    uploadBytesPerMinute: body.upload_bytes_per_minute,
    textDefaultOperator: body.text_default_operator,
  });
  return c.json({ status: 'OK', ...describe(await appOrNotFound(c.env.DB, app.id)) });
};

const replaceSchemaHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { fields } = await readJson(c, schemaBody);
  await replaceSchema(c.env, app, fields);
  return c.json({ status: 'OK', app_id: app.id, schema: { fields } });
};

/** The inference service's answer, or 503 saying it is unavailable. */
const whenAvailable = <T>(call: Promise<T>): Promise<T> =>
  call.catch((error: unknown) => {
    if (error instanceof InferenceUnavailableError) throw new ApiError(503, `The inference service is unavailable: ${error.message}`);
    throw error;
  });

/**
 * An application's own detectable types, checked against the loaded detector (admin/product-types.ts); they apply to
 * the next search, and to the objects of images inserted from then on (docs/decisions.md, "Product types and
 * attributes").
 */
const setProductTypesHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { types } = await readJson(c, productTypesBody);
  const problem = productTypesProblem(types, await whenAvailable(inference(c.env).detector()));
  if (problem) throw invalidParameter(problem);
  await setProductTypes(c.env.DB, app.id, types);
  return c.json({ status: 'OK', ...describe(await appOrNotFound(c.env.DB, app.id)) });
};

/** Back to the service's default types. */
const resetProductTypesHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  await setProductTypes(c.env.DB, app.id, null);
  return c.json({ status: 'OK', ...describe(await appOrNotFound(c.env.DB, app.id)) });
};

/** An application's latest reindex as the admin API answers it; 404 when it never had one. */
async function describeReindex(env: Env, app: AppRecord) {
  const db = catalogDatabase(env, app);
  const reindex = await getReindex(db, app.id);
  if (!reindex) throw new ApiError(404, 'The application has never been reindexed.');
  const { total, inModel } = await imagesInModel(db, app.id, reindex.toModel);
  return {
    status: 'OK' as const,
    app_id: app.id,
    embed_model: app.embedModel,
    reindex: {
      from_model: reindex.fromModel,
      to_model: reindex.toModel,
      state: reindex.state,
      images_total: total,
      images_done: inModel,
      error: reindex.error,
      started_at: reindex.startedAt,
      updated_at: reindex.updatedAt,
      finished_at: reindex.finishedAt,
    },
  };
}

async function resumeReindexInto(db: D1Database, app: AppRecord, toModel: string): Promise<number> {
  const under = await getReindex(db, app.id);
  const step = under?.toModel === toModel ? await resumeReindex(db, app.id) : null;
  if (step !== null) return step;
  if (reindexUnderWay(under)) {
    throw new ApiError(409, `A reindex into ${under.toModel} is under way (${under.state}); ask again once it is done.`);
  }
  throw invalidParameter(`embed_model: the application is on ${toModel} already.`);
}

/**
 * Model upgrades without re-inserting (ingest/reindex.ts): the application's images are embedded again by
 * `embed_model` while its searches keep the current model, then it moves to the new one at once.
 */
const startReindexHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { embed_model: toModel } = await readJson(c, reindexBody);
  requireEmbedModel(c.env, toModel);
  await refuseWhileMoving(c.env, app);
  const db = catalogDatabase(c.env, app);
  const tuning = await getTuning(db, app.id);
  if (app.tuning !== null || (tuning && TUNING_UNDER_WAY.includes(tuning.state))) {
    throw new ApiError(409, 'The application is tuned, or a tuning of it is under way: untune it first (DELETE /admin/apps/{app_id}/tune).');
  }
  const problem = await whenAvailable(embedModelProblem(c.env, toModel));
  if (problem) throw invalidParameter(`embed_model: ${problem}`);
  await placing(placeApplication(c.env, app.id, groupsOf(c.env, toModel)));
  const started = await startReindex(db, app, toModel);
  // Not begun: one into this model under way goes on with a new chain of steps (the old one stops); else refused.
  const step = started?.step ?? (await resumeReindexInto(db, app, toModel));
  await sendJobMessage(c.env.INSERT_QUEUE, { reindex: app.id, step });
  return c.json(await describeReindex(c.env, app), 202);
};

const getReindexHandler: Handler<AppEnv, AppPath> = async (c) => c.json(await describeReindex(c.env, await appOrNotFound(c.env.DB, c.req.param('app_id'))));

/** An application's latest tuning as the admin API answers it; 404 when it was never tuned. */
async function tuningAnswer(env: Env, appId: string) {
  const app = await appOrNotFound(env.DB, appId);
  const tuning = await getTuning(catalogDatabase(env, app), appId);
  if (!tuning) throw new ApiError(404, 'The application has never been tuned.');
  return { status: 'OK' as const, app_id: app.id, embed_model: app.embedModel, tuned: app.tuning !== null, tuning: describeTuning(tuning) };
}

/**
 * Tunes the application's search on a label field (ingest/tuning.ts): refused while a reindex or another tuning is
 * under way (409), for a field not in the schema or too few labels (400), or a model without tuned indexes (400).
 */
const startTuningHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { label_field: labelField, apply = 'better' } = await readJson(c, tuneBody);
  if (!embedModelIndexesOf(c.env, app.embedModel).tuned) throw invalidParameter(`The application's model ${app.embedModel} has no tuned indexes in EMBED_MODELS.`);
  await refuseWhileMoving(c.env, app);
  const db = catalogDatabase(c.env, app);
  const reindex = await getReindex(db, app.id);
  if (reindexUnderWay(reindex)) throw new ApiError(409, `A reindex into ${reindex.toModel} is under way (${reindex.state}); tune once it is done.`);
  const running = await getTuning(db, app.id);
  if (running && TUNING_UNDER_WAY.includes(running.state)) throw new ApiError(409, `A tuning on ${running.labelField} is under way (${running.state}); ask again once it is done.`);
  const fit = await tuningClasses(db, app.id, await getSchema(c.env, app), labelField);
  if ('problem' in fit) throw invalidParameter(fit.problem);
  const started = await startTuning(c.env, app, { labelField, apply, ...fit }, appCacheTtlMs(c.env));
  if (!started) throw new ApiError(409, 'A reindex or another tuning of the application began meanwhile; ask again once it is done.');
  await sendJobMessage(c.env.INSERT_QUEUE, { tuning: app.id, step: started.step });
  return c.json(await tuningAnswer(c.env, app.id), 202);
};

const getTuningHandler: Handler<AppEnv, AppPath> = async (c) => c.json(await tuningAnswer(c.env, c.req.param('app_id')));

/** Back to the untuned vectors at once (a tuning under way stops); the tuning's vectors are deleted after. */
const untuneHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const step = await untune(c.env, app, appCacheTtlMs(c.env));
  if (step === null) throw new ApiError(409, 'The application is not tuned, and no tuning of it is under way.');
  await sendJobMessage(c.env.INSERT_QUEUE, { tuning: app.id, step });
  return c.json(await tuningAnswer(c.env, app.id));
};

/** A job that writes the catalog (a reindex, a tuning) waits for a move under way: its writes would be held. */
async function refuseWhileMoving(env: Env, app: AppRecord): Promise<void> {
  const move = await getMove(env.DB, app.id);
  if (move && MOVE_UNDER_WAY.includes(move.state)) throw new ApiError(409, `A move to ${move.toDatabase} is under way (${move.state}); ask again once it is done.`);
}

/** An application's latest move as the admin API answers it; 404 when it never moved. */
async function moveAnswer(env: Env, app: AppRecord) {
  const move = await getMove(env.DB, app.id);
  if (!move) throw new ApiError(404, 'The application has never been moved.');
  return {
    status: 'OK' as const,
    app_id: app.id,
    database: app.database,
    move: {
      from_database: move.fromDatabase,
      to_database: move.toDatabase,
      state: move.state,
      rows_copied: move.rowsCopied,
      error: move.error,
      started_at: move.startedAt,
      updated_at: move.updatedAt,
      finished_at: move.finishedAt,
    },
  };
}

/**
 * Moves the application's catalog to another database while it keeps serving (ingest/move.ts): its writes are held
 * from here (answered busy) until its rows are there; refused while a reindex, a tuning or another move is under way.
 */
const startMoveHandler: Handler<AppEnv, AppPath> = async (c) => {
  const app = await appOrNotFound(c.env.DB, c.req.param('app_id'));
  const { database } = await readJson(c, moveBody);
  if (!databaseNames(c.env).includes(database)) throw invalidParameter(`database: ${database} is not one of ${databaseNames(c.env).join(', ')}`);
  if (database === app.database) throw invalidParameter(`database: the application is on ${database} already.`);
  const catalog = catalogDatabase(c.env, app);
  const [reindex, tuning] = await Promise.all([getReindex(catalog, app.id), getTuning(catalog, app.id)]);
  if (reindexUnderWay(reindex) || (tuning && TUNING_UNDER_WAY.includes(tuning.state))) {
    throw new ApiError(409, 'A reindex or a tuning of the application is under way: move it once that is done.');
  }
  const move = await startMove(c.env.DB, app.id, app.database, database);
  if (!move) throw new ApiError(409, 'A move of the application is under way; ask again once it is done.');
  await fence(catalog, app.id, formatTimestamp());
  await sendJobMessage(c.env.INSERT_QUEUE, { move: app.id, step: move.step });
  return c.json(await moveAnswer(c.env, app), 202);
};

const getMoveHandler: Handler<AppEnv, AppPath> = async (c) => c.json(await moveAnswer(c.env, await appOrNotFound(c.env.DB, c.req.param('app_id'))));

/** The operator's capacity view: every database and index with what it holds (docs/scale.md). */
const placementHandler: Handler<AppEnv> = async (c) => {
  const [databases, indexes] = await Promise.all([databaseFills(c.env), indexFills(c.env)]);
  return c.json({ status: 'OK', databases, indexes });
};

const JSON_BODY = ['application/json'];
/** The original service's "dashboard", as an HTTP API (docs/decisions.md): its failures answer with their HTTP status. */
const adminAccess = { tag: 'Admin', auth: 'admin', endpoint: 'admin' } satisfies Partial<RouteDeclaration>;

export const adminRoutes = [
  route(
    {
      ...adminAccess,
      method: 'post',
      path: '/admin/apps',
      operationId: 'createApp',
      summary: 'Create an application',
      body: { media: JSON_BODY, schema: createAppBody },
      success: { status: 201, schema: responses.createdAppResponse, description: 'The new application and its keys.' },
      failure: httpErrors(507),
    },
    createAppHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'get',
      path: '/admin/placement',
      operationId: 'getPlacement',
      summary: 'Every database and vector index, with what it holds',
      description:
        'The capacity view (docs/scale.md): each D1 database with its applications, images and bytes; each index with ' +
        'its model (null: the colour indexes), its vectors, and its namespaces (one a shard placed on it).',
      success: { status: 200, schema: responses.placementResponse, description: 'Databases and indexes.' },
      failure: httpErrors(),
    },
    placementHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'get',
      path: '/admin/apps/{app_id}',
      operationId: 'getApp',
      summary: 'An application, its settings and schema (no secrets)',
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.appResponse, description: 'The application.' },
      failure: httpErrors(404),
    },
    getAppHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'patch',
      path: '/admin/apps/{app_id}',
      operationId: 'updateApp',
      summary: 'Operator settings of an application',
      description:
        '`image_limit` (collection size), `pending_limit` (images waiting to be processed), `searches_per_minute` and ' +
        '`upload_bytes_per_minute` (calls of the searches and `/image`, and query-image bytes, uploaded or downloaded, a ' +
        'minute, past which they answer busy with `Retry-After`), null lifting one; ' +
        '`text_default_operator` between adjacent words of a text `fq`.',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: settingsBody },
      success: { status: 200, schema: responses.appSettingsResponse, description: 'The application.' },
      failure: httpErrors(404),
    },
    updateAppHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'put',
      path: '/admin/apps/{app_id}/schema',
      operationId: 'replaceSchema',
      summary: 'Replace the metadata schema of an application',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: schemaBody },
      success: { status: 200, schema: responses.appSchemaResponse, description: 'The new schema.' },
      failure: httpErrors(404),
    },
    replaceSchemaHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'post',
      path: '/admin/apps/{app_id}/reindex',
      operationId: 'startReindex',
      summary: "Re-embed an application's images by another embedding model",
      description:
        "The stored originals are embedded again by `embed_model` into that model's indexes while searches keep using " +
        'the current one; once every image is in it, the application moves to it at once and the old vectors are ' +
        'deleted. Asked again, a reindex under way into the same model goes on; a failed one resumes.',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: reindexBody },
      success: { status: 202, schema: responses.reindexResponse, description: 'The reindex and its progress.' },
      failure: httpErrors(404, 409, 503, 507),
    },
    startReindexHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'get',
      path: '/admin/apps/{app_id}/reindex',
      operationId: 'getReindex',
      summary: "An application's latest reindex and its progress",
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.reindexResponse, description: 'The reindex and its progress.' },
      failure: httpErrors(404),
    },
    getReindexHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'post',
      path: '/admin/apps/{app_id}/move',
      operationId: 'startMove',
      summary: "Move an application's catalog to another D1 database",
      description:
        'Its writes (`/insert`, `/remove`, metadata updates) are held from here, answered busy with `Retry-After` to ' +
        'be sent again, and queued work waits, while its rows are copied a chunk at a time; searches keep answering ' +
        'from the database it is on. Then it switches at once, and its rows are deleted from the old database. ' +
        '`placement.moving` names the target until it is there. Refused while a reindex, a tuning or another move of ' +
        'it is under way (409).',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: moveBody },
      success: { status: 202, schema: responses.moveResponse, description: 'The move and its progress.' },
      failure: httpErrors(404, 409),
    },
    startMoveHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'get',
      path: '/admin/apps/{app_id}/move',
      operationId: 'getMove',
      summary: "An application's latest move and its progress",
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.moveResponse, description: 'The move and its progress.' },
      failure: httpErrors(404),
    },
    getMoveHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'post',
      path: '/admin/apps/{app_id}/tune',
      operationId: 'startTuning',
      summary: "Tune an application's search on a label field of its catalog",
      description:
        'Fits a projection of the application\'s embedding on its stored vectors and `label_field`\'s values (no new ' +
        'inference), projects every image and object into it, and searches the held-out fifth of the labelled images ' +
        'before and after (`held_out`); then moves the application to it at once, unless held-out precision@5 would ' +
        'fall (`apply: "always"` moves it regardless). Every query vector is then projected the same way. Refused ' +
        'for a field not in the schema or fewer than 2 values with 3 labelled images each (400), and while a ' +
        'reindex or another tuning is under way (409).',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: tuneBody },
      success: { status: 202, schema: responses.tuningResponse, description: 'The tuning and its progress.' },
      failure: httpErrors(404, 409),
    },
    startTuningHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'get',
      path: '/admin/apps/{app_id}/tune',
      operationId: 'getTuning',
      summary: "An application's latest tuning and its report",
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.tuningResponse, description: 'The tuning and its report.' },
      failure: httpErrors(404),
    },
    getTuningHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'delete',
      path: '/admin/apps/{app_id}/tune',
      operationId: 'untune',
      summary: 'Move an application back to its untuned search',
      description: 'At once for every search; a tuning under way stops. The tuned vectors are deleted after.',
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.tuningResponse, description: 'The tuning, now retiring.' },
      failure: httpErrors(404, 409),
    },
    untuneHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'put',
      path: '/admin/apps/{app_id}/product-types',
      operationId: 'setProductTypes',
      summary: "Set an application's own detectable types",
      description:
        'With an open-vocabulary detector (OWL-ViT, OWLv2) any types, each found by its `prompts` (its default ' +
        'prompts, or "a <type>", when absent); otherwise a subset of the types the detector reports, without prompts. ' +
        "`attributes_list` names each type's attributes and their values (`color`: the service's colour names); " +
        'without it, a type has `color`. `product_types_list`, `object_types_list` and `detection` follow from the next ' +
        'search; objects of images already stored keep their types until a reindex.',
      pathParams: APP_PATH,
      body: { media: JSON_BODY, schema: productTypesBody },
      success: { status: 200, schema: responses.appSettingsResponse, description: 'The application.' },
      failure: httpErrors(404, 503),
    },
    setProductTypesHandler,
  ),
  route(
    {
      ...adminAccess,
      method: 'delete',
      path: '/admin/apps/{app_id}/product-types',
      operationId: 'resetProductTypes',
      summary: "Give an application the service's default types again",
      pathParams: APP_PATH,
      success: { status: 200, schema: responses.appSettingsResponse, description: 'The application.' },
      failure: httpErrors(404),
    },
    resetProductTypesHandler,
  ),
];
