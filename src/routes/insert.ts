import { Hono } from 'hono';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { ApiError, type DataErrorEntry } from '../http/envelope';
import { DATA_ERRORS } from '../http/messages';
import { endpoint } from '../http/middleware';
import { parseInsert } from '../ingest/insert-request';
import { getSchema } from '../storage/apps';
import { createTransaction, getTransactionStatus } from '../storage/transactions';

/** `error_limit` when the caller gives none, and its ceiling (spec 8 leaves both open). */
export const ERROR_PAGE_DEFAULT_LIMIT = 10;
export const ERROR_PAGE_MAX_LIMIT = 100;

export const insertRoutes = new Hono<AppEnv>();

insertRoutes.post('/insert', endpoint('insert', 'data'), authenticate({ allowAppKey: false }), async (c) => {
  const parsed = parseInsert(c.var.params, await getSchema(c.env.DB, c.var.app.id));
  if (parsed.kind === 'too_many') throw ApiError.data(400, parsed.error);

  const { accepted, rejected } = parsed;
  if (accepted.length === 0) {
    const error: DataErrorEntry[] = [...rejected, { error_code: DATA_ERRORS.noImageInserted.code, error_message: DATA_ERRORS.noImageInserted.message }];
    return c.json({ status: 'fail', method: 'insert', total: 0, result: [], error }, 400);
  }
  const transId = await createTransaction(c.env.DB, c.var.app.id, accepted);
  await c.env.INSERT_QUEUE.sendBatch(accepted.map((item) => ({ body: { transId, index: item.index } })));
  return c.json({
    status: rejected.length === 0 ? 'OK' : 'warning',
    method: 'insert',
    trans_id: transId,
    total: accepted.length,
    result: [],
    error: rejected,
  });
});

insertRoutes.get('/insert/status/:trans_id', endpoint('insert/status', 'data'), authenticate({ allowAppKey: false }), async (c) => {
  const notFound = ApiError.data(404, DATA_ERRORS.transactionNotFound);
  const raw = c.req.param('trans_id');
  if (!/^\d{1,16}$/.test(raw)) throw notFound;
  const status = await getTransactionStatus(c.env.DB, c.var.app.id, Number(raw), {
    errorPage: c.var.params.integer('error_page', { default: 1, min: 1, max: Number.MAX_SAFE_INTEGER }),
    errorLimit: c.var.params.integer('error_limit', { default: ERROR_PAGE_DEFAULT_LIMIT, min: 1, max: ERROR_PAGE_MAX_LIMIT }),
  });
  if (!status) throw notFound;
  return c.json({ status: 'OK', method: 'insert/status', result: [status], error: [] });
});
