import { integer, readParam } from '../http/param-schema';
import type { FailureFields } from '../http/middleware';
import type { RequestParams } from '../http/params';

/** docs/api.md, Limits: at most 1000 results in total, 10 per page by default. */
export const MAX_RESULTS = 1000;

const pageSize = { min: 1, max: MAX_RESULTS, default: 10 };

export const PAGING = {
  page: integer({ min: 1, max: MAX_RESULTS, default: 1 }, 'Page of results to return, from 1.'),
  limit: integer(pageSize, 'Results per page. At most 1000 results in total can be returned.'),
  result_limit: integer(pageSize, 'Results per page for each detected object.'),
};

export type Paging = { page: number; limit: number };

export const readPaging = (params: RequestParams, limitName: 'limit' | 'result_limit'): Paging => ({
  page: readParam(params, PAGING, 'page'),
  limit: readParam(params, PAGING, limitName),
});

/** The paging a failed answer reports: what the request asked for where it can be read, the defaults elsewhere. */
function pagingOrDefaults(params: RequestParams | undefined, limitName: 'limit' | 'result_limit'): Paging {
  const read = (name: 'page' | 'limit' | 'result_limit'): number => {
    try {
      if (params) return readParam(params, PAGING, name);
    } catch {
      // A bad value is what failed; the default stands in for it.
    }
    return PAGING[name].parse(undefined);
  };
  return { page: read('page'), limit: read(limitName) };
}

/** A failed search answers the paging asked for and an empty page, so a client reading the page finds one. */
export const emptySearchPage: FailureFields = (params, reqid) => {
  const { page, limit } = pagingOrDefaults(params, 'limit');
  return { page, limit, total: 0, result: [], reqid };
};

/** A failed multiple product search answers the paging asked for and no objects. */
export const noObjects: FailureFields = (params, reqid) => {
  const { page, limit } = pagingOrDefaults(params, 'result_limit');
  return { page, result_limit: limit, objects: [], reqid };
};
