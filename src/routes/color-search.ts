import { paletteVector } from '../colors/palette-vector';
import { ok } from '../http/middleware';
import { route } from '../http/route';
import * as responses from '../openapi/responses';
import { ADVANCED } from '../search/advanced';
import { requireCollection } from '../search/collection';
import { COLOR_QUERY, readColorQuery } from '../search/color-query';
import { readSearchOptions } from '../search/options';
import { emptySearchPage, PAGING } from '../search/paging';
import { searchQuota } from '../search/quota';
import { runSearch } from '../search/pipeline';
import { searchedApp } from '../search/plan';
import { catalogDatabase } from '../storage/databases';

/** Search by color (docs/api.md, GET /colorsearch): images whose palette (or a detected object's) is nearest the asked colours. */
export const colorSearchRoutes = [
  route(
    {
      method: 'get',
      path: '/colorsearch',
      operationId: 'colorsearch',
      tag: 'Search',
      summary: 'Search by colour',
      description: "Images whose palette (or a detected object's) is nearest the asked colours.",
      auth: 'client',
      endpoint: 'colorsearch',
      reads: 'near',
      query: { ...COLOR_QUERY, page: PAGING.page, limit: PAGING.limit, ...ADVANCED },
      success: { status: 200, schema: responses.colorSearchResponse, description: 'Results, best first.' },
      failure: { envelope: responses.searchFailure, fields: emptySearchPage },
    },
    searchQuota,
    async (c) => {
      const { params, app } = c.var;
      const colors = readColorQuery(params, Number(c.env.COLOR_SEARCH_MAX_COLORS));
      const options = readSearchOptions(params, c.var.schema, app, { limitName: 'limit', allowGroupBy: true });
      await requireCollection(catalogDatabase(c.env, app), app.id);

      const page = await runSearch(c.env, { ...searchedApp(app), space: 'color', vector: paletteVector(colors) }, options);
      return ok(c, {
        page: options.paging.page,
        limit: options.paging.limit,
        ...page,
        ...(options.qinfo ? { qinfo: { colors } } : {}),
      });
    },
  ),
];
