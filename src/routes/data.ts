import { isFencedWrite } from '../storage/moves';
import type { Handler } from 'hono';
import { storedSchema } from '../auth/middleware';
import type { AppEnv, Env } from '../env';
import { ApiError, dataErrorEntry, invalidParameter } from '../http/envelope';
import { DATA_ERRORS, GENERAL } from '../http/messages';
import { failedWith } from '../http/middleware';
import { readParam } from '../http/param-schema';
import { FORMS, route } from '../http/route';
import { dataParamBudget, indexedParams, INSERT_LIMITS, INSERT_STATUS, REMOVED_IMAGE, TRANSACTION } from '../ingest/data-params';
import { INSERT_IMAGE, parseInsert, resolveMetadataUpdates, type InsertImages } from '../ingest/insert-request';
import { sendInsertMessages } from '../ingest/message';
import { discardStaged, stageUploads } from '../ingest/staged-uploads';
import * as responses from '../openapi/responses';
import type { AppRecord } from '../storage/apps';
import { catalogDatabase } from '../storage/databases';
import { existingNames, removeImages } from '../storage/images';
import { deleteRetiredSoon } from '../storage/retired';
import { createTransaction, deleteTransaction, getTransactionStatus, isMetadataUpdate, itemKind, type InsertItem } from '../storage/transactions';
import { LimitReached } from '../storage/usage';

/**
 * An `/insert` within the API's limits carries up to 100 images of 32 values of 5000 characters (16 MB of ASCII):
 * its body may be 20 MB, more than other endpoints' MAX_BODY_BYTES. Multibyte values take fewer images a call
 * (docs/decisions.md).
 */
export const INSERT_MAX_BODY_BYTES = 20 * 1024 * 1024;

/**
 * A write refused while the application moves to another database (ingest/move.ts) answers busy, to be sent again in a
 * moment: nothing of it was accepted.
 */
const MOVING_RETRY_SECONDS = 2;
async function unlessMoving<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (isFencedWrite(error)) throw new ApiError(503, GENERAL.busy, undefined, { retryAfterSeconds: MOVING_RETRY_SECONDS });
    throw error;
  }
}

/** The operator's limits (createTransaction decides them): a full collection refuses the call, a backlog is "busy". */
async function recordWithinLimits(env: Env, app: AppRecord, items: InsertItem[]): Promise<number> {
  try {
    return await unlessMoving(createTransaction(env, app, items, app.limits));
  } catch (error) {
    if (!(error instanceof LimitReached)) throw error;
    throw error.limit === 'image_limit' ? new ApiError(403, GENERAL.collectionFull) : new ApiError(429, GENERAL.busy);
  }
}

/** A failed insert or remove affected no image. */
const nothingDone = () => ({ total: 0, result: [] });

const insert: Handler<AppEnv> = async (c) => {
  const { app, params } = c.var;
  const parsed = parseInsert(params, await storedSchema(c));

  // Files first: an image is accepted only once its bytes are checked and kept (ingest/staged-uploads.ts).
  const staged = await stageUploads(c.env.BLOBS, app.id, parsed);
  const db = catalogDatabase(c.env, app);
  let recorded: InsertImages & { transId: number | null };
  try {
    const updates = staged.accepted.filter(isMetadataUpdate).map((item) => item.imName);
    const resolved = resolveMetadataUpdates(staged, await existingNames(db, app.id, updates));
    recorded = { ...resolved, transId: resolved.accepted.length === 0 ? null : await recordWithinLimits(c.env, app, resolved.accepted) };
  } catch (error) {
    await discardStaged(c.env.BLOBS, staged.accepted);
    throw error;
  }
  const { accepted, rejected, ignored, transId } = recorded;
  if (transId === null) return failedWith(c, [...rejected, dataErrorEntry(DATA_ERRORS.noImageInserted)]);
  try {
    await sendInsertMessages(c.env, accepted.map((item) => ({ transId, index: item.index, database: app.database, kind: itemKind(item) })));
  } catch (error) {
    // Without its messages the transaction would never finish: take it back and let the client retry.
    console.error(JSON.stringify({ event: 'insert_enqueue_failed', reqid: c.var.reqid, error: String(error) }));
    await deleteTransaction(db, transId);
    await discardStaged(c.env.BLOBS, accepted);
    throw new ApiError(503, GENERAL.busy);
  }
  return c.json({
    status: rejected.length === 0 ? 'OK' : 'warning',
    method: 'insert',
    trans_id: transId,
    total: accepted.length,
    result: [],
    error: rejected,
    // Only when something was ignored: other answers stay as the contract has them (docs/decisions.md, Fields outside the schema).
    ...(ignored.length > 0 ? { ignored_fields: ignored } : {}),
  });
};

const insertStatus: Handler<AppEnv, '/insert/status/:trans_id'> = async (c) => {
  const notFound = ApiError.data(404, DATA_ERRORS.transactionNotFound);
  // Anything but a trans_id (digits, below 2^53) names no transaction.
  const raw = c.req.param('trans_id');
  const transId = Number(raw);
  if (!/^\d{1,16}$/.test(raw) || !TRANSACTION.trans_id.safeParse(transId).success) throw notFound;
  const status = await getTransactionStatus(catalogDatabase(c.env, c.var.app), c.var.app.id, transId, {
    errorPage: readParam(c.var.params, INSERT_STATUS, 'error_page'),
    errorLimit: readParam(c.var.params, INSERT_STATUS, 'error_limit'),
  });
  if (!status) throw notFound;
  return c.json({ status: 'OK', method: 'insert/status', result: [status], error: [] });
};

/**
 * Removes images: hidden from search at once (D1), then their vectors and stored bytes are deleted, by a path that
 * is retried until it succeeds (storage/retired.ts). An insert of a name accepted before its removal is not applied.
 */
const remove: Handler<AppEnv> = async (c) => {
  const requested = [...indexedParams(c.var.params)].flatMap(([index, { fields }]) => {
    const imName = fields.get('im_name');
    return imName === undefined ? [] : [{ index, imName }];
  });
  if (requested.length === 0) throw new ApiError(400, 'im_name[0] is required.');

  const removedNames = new Set(await unlessMoving(removeImages(catalogDatabase(c.env, c.var.app), c.var.app.id, requested.map((item) => item.imName))));
  await deleteRetiredSoon(c.env, c.var.app);
  const seen = new Set<string>();
  const error = requested.flatMap((item) => {
    const found = removedNames.has(item.imName) && !seen.has(item.imName);
    seen.add(item.imName);
    return found ? [] : [dataErrorEntry(DATA_ERRORS.imageNotFound, { index: item.index, im_name: item.imName })];
  });
  if (removedNames.size === 0) return failedWith(c, error);
  return c.json({ status: error.length > 0 ? 'warning' : 'OK', method: 'remove', total: removedNames.size, result: [], error });
};

const dataAccess = { tag: 'Data', auth: 'backend' } as const;

export const dataRoutes = [
  route(
    {
      ...dataAccess,
      endpoint: 'insert',
      method: 'post',
      path: '/insert',
      operationId: 'insert',
      summary: 'Add or update images',
      description:
        `Each image is sent as \`{key}[i]\` form parameters, \`i\` its 0-based index: at most ` +
        `${INSERT_LIMITS.maxImages} images of at most ${INSERT_LIMITS.maxKeysPerImage} keys each. Images are processed ` +
        'asynchronously: follow the transaction with `/insert/status`. An image is downloaded from `im_url` or sent as a ' +
        'file, `image` (multipart). An image already in the collection sent without either has only its given metadata ' +
        'fields changed (no download, no new embedding).',
      body: { media: FORMS, indexed: INSERT_IMAGE },
      maxBodyBytes: INSERT_MAX_BODY_BYTES,
      paramBudget: dataParamBudget(() => ApiError.data(400, DATA_ERRORS.batchTooLarge)),
      success: { status: 200, schema: responses.insertResponse, description: '`warning` when some images were refused.' },
      failure: { envelope: responses.dataFailure, fields: nothingDone },
    },
    insert,
  ),
  route(
    {
      ...dataAccess,
      endpoint: 'insert/status',
      method: 'get',
      path: '/insert/status/{trans_id}',
      operationId: 'insertStatus',
      summary: 'Progress and errors of an insert transaction',
      description: 'There are ceil(fail_count / error_limit) pages of errors.',
      pathParams: TRANSACTION,
      query: INSERT_STATUS,
      success: { status: 200, schema: responses.insertStatusResponse, description: 'The transaction.' },
      failure: { envelope: responses.insertStatusFailure, fields: () => ({ result: [] }) },
    },
    insertStatus,
  ),
  route(
    {
      ...dataAccess,
      endpoint: 'remove',
      method: 'post',
      path: '/remove',
      operationId: 'remove',
      summary: 'Remove images',
      description:
        `Names are sent as \`im_name[i]\`, at most ${INSERT_LIMITS.maxImages} per call; ` +
        'search stops finding them at once.',
      body: { media: FORMS, indexed: REMOVED_IMAGE },
      paramBudget: dataParamBudget(() => invalidParameter(`At most ${INSERT_LIMITS.maxImages} images can be removed per call.`)),
      success: { status: 200, schema: responses.removeResponse, description: '`warning` when a name was not found.' },
      failure: { envelope: responses.dataFailure, fields: nothingDone },
    },
    remove,
  ),
];
