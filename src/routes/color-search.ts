import { Hono } from 'hono';
import { authenticate } from '../auth/middleware';
import type { AppEnv } from '../env';
import { endpoint } from '../http/middleware';
import { paletteVector } from '../search/color-embedding';
import { readColorQuery } from '../search/color-query';
import { readPaging } from '../search/paging';
import { requireCollection } from '../search/collection';
import { searchSimilar } from '../search/similar';
import { requestedFields } from '../search/value-map';
import { getSchema } from '../storage/apps';

export const colorSearchRoutes = new Hono<AppEnv>();

/** Search by color (spec 4.7): images whose palette (or a detected object's) is nearest the asked colours. */
colorSearchRoutes.get('/colorsearch', endpoint('colorsearch', 'search'), authenticate({ allowAppKey: true }), async (c) => {
  const { params, app } = c.var;
  const colors = readColorQuery(params, Number(c.env.COLOR_SEARCH_MAX_COLORS));
  const paging = readPaging(params);
  const withScore = params.boolean('score', false);
  const fields = requestedFields(params, await getSchema(c.env.DB, app.id));
  await requireCollection(c.env.DB, app.id);

  const page = await searchSimilar(c.env, { appId: app.id, space: 'color', vector: paletteVector(colors), paging, withScore, fields });
  return c.json({
    status: 'OK',
    method: 'colorsearch',
    error: [],
    page: paging.page,
    limit: paging.limit,
    total: page.total,
    result: page.result,
    reqid: c.var.reqid,
  });
});
