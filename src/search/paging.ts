import type { RequestParams } from '../http/params';

/** Spec 8: at most 1000 results in total, 10 per page by default. */
export const MAX_RESULTS = 1000;
export const DEFAULT_PAGE_SIZE = 10;

export type Paging = { page: number; limit: number };

export const readPaging = (params: RequestParams, limitName = 'limit'): Paging => ({
  page: params.integer('page', { default: 1, min: 1, max: MAX_RESULTS }),
  limit: params.integer(limitName, { default: DEFAULT_PAGE_SIZE, min: 1, max: MAX_RESULTS }),
});
