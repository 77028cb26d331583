import { Hono } from 'hono';
import { createFactory } from 'hono/factory';
import { wrapTime } from 'hono/timing';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { endpoint } from '../http/middleware';
import { requireCollection } from '../search/collection';
import { readSearchOptions } from '../search/options';
import { emptySearchPage } from '../search/paging';
import { searchQuota } from '../search/quota';
import { searchSimilar } from '../search/similar';
import { embedQueryText, readQueryText } from '../search/text-query';
import { getSchema } from '../storage/apps';

export const textSearchRoutes = new Hono<AppEnv>();
const factory = createFactory<AppEnv>();

/**
 * Search by text (not in the spec): the text's embedding by the application's model, which must read text, against
 * whole images and detected objects of every type, each image at its best match. Answered as `/search` is.
 */
const textSearch = factory.createHandlers(endpoint('textsearch', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { params, app } = c.var;
  const text = readQueryText(params, { required: true });
  const options = readSearchOptions(params, await getSchema(c.env.DB, app.id), app, { limitName: 'limit', allowGroupBy: true });
  await requireCollection(c.env.DB, app.id);

  const vector = await wrapTime(c, 'inference', embedQueryText(c.env, text, app.embedModel));
  const page = await wrapTime(c, 'index', searchSimilar(c.env, { appId: app.id, embedModel: app.embedModel, space: 'visual', vector, anyObject: true }, options));
  return c.json({
    status: 'OK',
    method: 'textsearch',
    error: [],
    page: options.paging.page,
    limit: options.paging.limit,
    ...page,
    ...(options.qinfo ? { qinfo: { q: text } } : {}),
    reqid: c.var.reqid,
  });
});

// A long text fits a form body better than a URL; either is read alike.
for (const method of ['get', 'post'] as const) textSearchRoutes[method]('/textsearch', ...textSearch);
