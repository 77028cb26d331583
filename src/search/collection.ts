import { ApiError } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { hasImages } from '../storage/images';

/** Search needs something to search in: said before any query image is processed. */
export async function requireCollection(db: D1Database, appId: string): Promise<void> {
  if (!(await hasImages(db, appId))) throw new ApiError(404, SEARCH_ERRORS.emptyCollection);
}
