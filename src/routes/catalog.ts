import type { Handler } from 'hono';
import { storedSchema } from '../auth/middleware';
import type { AppEnv } from '../env';
import type { FailureFields } from '../http/middleware';
import { ok } from '../http/middleware';
import { integer, readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';
import { route } from '../http/route';
import * as responses from '../openapi/responses';
import { fetchableFields, toValueMap } from '../search/value-map';
import { catalogDatabase } from '../storage/databases';
import { listImages } from '../storage/images';

/** A catalog is paged through to its end, however large: no cap on `page` but what an offset can hold. */
const CATALOG_PAGING = {
  page: integer({ min: 1, max: 1_000_000, default: 1 }, 'Page of images to return, from 1.'),
  limit: integer({ min: 1, max: 100, default: 20 }, 'Images per page.'),
};

const readPaging = (params: RequestParams) => ({
  page: readParam(params, CATALOG_PAGING, 'page'),
  limit: readParam(params, CATALOG_PAGING, 'limit'),
});

/** A failed listing answers an empty page, the paging asked for where it can be read. */
const emptyPage: FailureFields = (params, reqid) => {
  let paging = { page: CATALOG_PAGING.page.parse(undefined), limit: CATALOG_PAGING.limit.parse(undefined) };
  try {
    if (params) paging = readPaging(params);
  } catch {
    // A bad value is what failed: the defaults stand in.
  }
  return { ...paging, total: 0, result: [], reqid };
};

/**
 * The application's catalog, a page at a time, with its schema: the web console's Catalog page. Basic auth only:
 * what a shop holds is its own business, not a browser client's (docs/decisions.md).
 */
const listCatalog: Handler<AppEnv> = async (c) => {
  const { app, params } = c.var;
  const paging = readPaging(params);
  const schema = await storedSchema(c);
  const fields = fetchableFields(schema);
  const { total, images } = await listImages(catalogDatabase(c.env, app), app.id, paging, fields);
  const result = images.map(({ im_name, metadata }) => {
    const valueMap = toValueMap(metadata, fields);
    return Object.keys(valueMap).length > 0 ? { im_name, value_map: valueMap } : { im_name };
  });
  return ok(c, {
    ...paging,
    total,
    result,
    app_id: app.id,
    schema: { fields: schema.map(({ name, type, searchable }) => ({ name, type, searchable })) },
    product_types: app.productTypes,
  });
};

export const catalogRoutes = [
  route(
    {
      method: 'get',
      path: '/images',
      operationId: 'images',
      tag: 'Data',
      summary: "A page of the application's images, and its schema",
      description:
        "The web console's Catalog page; not in the ViSearch API. The latest written first, with the values of the " +
        'fields not of type text.',
      auth: 'backend',
      endpoint: 'images',
      reads: 'near',
      query: CATALOG_PAGING,
      success: { status: 200, schema: responses.catalogResponse, description: 'The page and the schema.' },
      failure: { envelope: responses.searchFailure, fields: emptyPage },
    },
    listCatalog,
  ),
];
