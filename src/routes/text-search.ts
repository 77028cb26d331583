import type { Handler } from 'hono';
import { wrapTime } from 'hono/timing';
import { z } from 'zod';
import type { AppEnv } from '../env';
import { ok } from '../http/middleware';
import { FORMS, route, type RouteDeclaration } from '../http/route';
import * as responses from '../openapi/responses';
import { ADVANCED } from '../search/advanced';
import { requireCollection } from '../search/collection';
import { readSearchOptions } from '../search/options';
import { emptySearchPage, PAGING } from '../search/paging';
import { searchQuota } from '../search/quota';
import { runSearch } from '../search/pipeline';
import { searchedApp } from '../search/plan';
import { embedQueryText, MODEL_READS_NO_TEXT, readQueryText, TEXT_QUERY } from '../search/text-query';
import { catalogDatabase } from '../storage/databases';

/**
 * Search by text (beyond the ViSearch API): the text's embedding by the application's model, which must read text, against
 * whole images and detected objects of every type, each image at its best match. Answered as `/search` is.
 */
const textSearch: Handler<AppEnv> = async (c) => {
  const { params, app } = c.var;
  const text = readQueryText(params, { required: true });
  const options = readSearchOptions(params, c.var.schema, app, { limitName: 'limit', allowGroupBy: true });
  await requireCollection(catalogDatabase(c.env, app), app.id);

  const vector = await wrapTime(c, 'inference', embedQueryText(c.env, text, app.embedModel));
  const page = await wrapTime(c, 'index', runSearch(c.env, { ...searchedApp(app), space: 'visual', vector, anyObject: true }, options));
  return ok(c, {
    page: options.paging.page,
    limit: options.paging.limit,
    ...page,
    ...(options.qinfo ? { qinfo: { q: text } } : {}),
  });
};

const textSearchParams = { ...TEXT_QUERY, page: PAGING.page, limit: PAGING.limit, ...ADVANCED };
const textSearchRoute = {
  tag: 'Search',
  auth: 'client',
  endpoint: 'textsearch',
  reads: 'near',
  success: { status: 200, schema: responses.textSearchResponse, description: 'Results, best first.' },
  failure: { envelope: responses.searchFailure, fields: emptySearchPage },
} satisfies Partial<RouteDeclaration>;

// A long text fits a form body better than a URL; either is read alike.
export const textSearchRoutes = [
  route(
    {
      ...textSearchRoute,
      method: 'get',
      path: '/textsearch',
      operationId: 'textsearch',
      summary: 'Search by text',
      description:
        "Beyond the ViSearch API. Images whose embedding, or a detected object's, is nearest the text's by the application's " +
        `model, each image at its best match. A model without a text tower answers \`fail\`: "${MODEL_READS_NO_TEXT}"`,
      query: textSearchParams,
    },
    searchQuota,
    textSearch,
  ),
  route(
    {
      ...textSearchRoute,
      method: 'post',
      path: '/textsearch',
      operationId: 'textsearchByForm',
      summary: 'Search by text, the parameters in a form body',
      description: 'As `GET /textsearch`.',
      body: { media: FORMS, schema: z.object(textSearchParams) },
    },
    searchQuota,
    textSearch,
  ),
];
