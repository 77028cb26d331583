import type { Env } from '../env';
import { selectPage, shownImages, toSearchPage, type SearchPage } from './answer';
import { findCandidates, indexFacts, readShownMetadata } from './execute';
import type { SearchOptions } from './options';
import { planSearch, type SearchRequest } from './plan';

/**
 * The search of every search endpoint (search, uploadsearch and discoversearch, colorsearch, textsearch), in three
 * steps: the plan from the request (search/plan.ts), the nearest vectors joined with D1 (search/execute.ts), and the
 * page (search/answer.ts). `value_map` is read for the images shown.
 */
export async function runSearch(env: Env, query: SearchRequest, options: SearchOptions): Promise<SearchPage> {
  const plan = planSearch(query, options, indexFacts(env, query.embedModel));
  const selection = selectPage(await findCandidates(env, plan), plan);
  return toSearchPage(selection, plan, await readShownMetadata(env, plan, shownImages(selection)));
}
