import { integer, readParam } from '../http/param-schema';
import type { RequestParams } from '../http/params';

/** Spec 8: at most 1000 results in total, 10 per page by default. */
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
