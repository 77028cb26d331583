import { Hono } from 'hono';
import { authenticate } from '../auth/middleware';
import { paletteVector } from '../colors/palette-vector';
import type { AppEnv } from '../env';
import { endpoint } from '../http/middleware';
import { readColorQuery } from '../search/color-query';
import { readSearchOptions } from '../search/options';
import { searchQuota } from '../search/quota';
import { emptySearchPage } from '../search/paging';
import { requireCollection } from '../search/collection';
import { searchSimilar } from '../search/similar';
import { getSchema } from '../storage/apps';

export const colorSearchRoutes = new Hono<AppEnv>();

/** Search by color (spec 4.7): images whose palette (or a detected object's) is nearest the asked colours. */
colorSearchRoutes.get('/colorsearch', endpoint('colorsearch', { failureFields: emptySearchPage }), authenticate({ allowAppKey: true }), searchQuota, async (c) => {
  const { params, app } = c.var;
  const colors = readColorQuery(params, Number(c.env.COLOR_SEARCH_MAX_COLORS));
  const options = readSearchOptions(params, await getSchema(c.env.DB, app.id), app, { limitName: 'limit', allowGroupBy: true });
  await requireCollection(c.env.DB, app.id);

  const page = await searchSimilar(c.env, { appId: app.id, embedModel: app.embedModel, space: 'color', vector: paletteVector(colors) }, options);
  return c.json({
    status: 'OK',
    method: 'colorsearch',
    error: [],
    page: options.paging.page,
    limit: options.paging.limit,
    ...page,
    ...(options.qinfo ? { qinfo: { colors } } : {}),
    reqid: c.var.reqid,
  });
});
