import type { ImageSummary } from '../storage/images';
import { fieldValue, type ImageMetadata } from '../storage/metadata';
import type { Candidate } from './execute';
import { facetsOf, type Facet } from './facets';
import { MAX_RESULTS } from './paging';
import type { SearchPlan } from './plan';
import { toValueMap } from './value-map';

export type ResultItem = { im_name: string; score?: number; value_map?: Record<string, string> };
export type GroupedResults = { group_by_key: string; group_limit: number; group_results: { group_by_value: string; result: ResultItem[] }[] };
/** What a search adds to its endpoint's envelope: `total`, then `result` or the grouped results, and `facets`. */
export type SearchPage = { total: number } & ({ result: ResultItem[] } | GroupedResults) & { facets?: Facet[] };

/** What a page shows, before its wire objects: the ranking's size, its facets, and the page's results or groups. */
export type PageSelection = {
  total: number;
  facets: Facet[] | null;
  shown: { kind: 'results'; results: Candidate[] } | { kind: 'groups'; field: string; groupLimit: number; groups: [value: string, members: Candidate[]][] };
};

/** Cosine similarity as the answer's score: 1.0 for an identical image, down to 0.0 (docs/decisions.md). */
export const toScore = (cosine: number): number => Math.min(1, Math.max(0, cosine));

/** Float32 scores of identical images may differ in their last bits. */
const SAME_SCORE = 1e-6;

/**
 * docs/api.md, Advanced parameters: `dedup_score_threshold` is the least gap between adjacent results, so a result
 * whose score is within it of the result kept before it is taken for a copy of that one and dropped; at the default
 * 0, identical images.
 */
function dedup(ranked: Candidate[], threshold: number): Candidate[] {
  const kept: Candidate[] = [];
  for (const entry of ranked) {
    const previous = kept.at(-1);
    if (previous === undefined || previous.score - entry.score > threshold + SAME_SCORE) kept.push(entry);
  }
  return kept;
}

const compareBy = (field: string, direction: 'asc' | 'desc') => (a: Candidate, b: Candidate): number => {
  const left = fieldValue(a.image.metadata, field);
  const right = fieldValue(b.image.metadata, field);
  if (left === undefined || right === undefined) return left === right ? 0 : left === undefined ? 1 : -1; // missing last
  const order = left < right ? -1 : left > right ? 1 : 0;
  return direction === 'asc' ? order : -order;
};

function groupsBy(ranked: Candidate[], field: string): Map<string, Candidate[]> {
  const groups = new Map<string, Candidate[]>();
  for (const entry of ranked) {
    const value = fieldValue(entry.image.metadata, field);
    if (value === undefined) continue;
    const group = groups.get(String(value)) ?? [];
    group.push(entry);
    groups.set(String(value), group);
  }
  return groups;
}

/**
 * The ranking of the advanced parameters (docs/api.md): the score range (held to each image's best match), best
 * first up to 1000 (docs/api.md, Limits), dedup, facets over all of them, then the plan's page or page of groups,
 * each sorted by `sort_by` once cut.
 */
export function selectPage(candidates: Candidate[], plan: SearchPlan): PageSelection {
  const inRange = ({ score }: Candidate) => toScore(score) >= plan.scoreRange.min && toScore(score) <= plan.scoreRange.max;
  let ranked = candidates.filter(inRange).sort((a, b) => b.score - a.score || a.image.id - b.image.id).slice(0, MAX_RESULTS);
  if (plan.dedup) ranked = dedup(ranked, plan.dedup.threshold);
  const facets = plan.facets ? facetsOf(ranked.map(({ image }) => image.metadata), plan.facets) : null;
  const sorted = (page: Candidate[]): Candidate[] => (plan.sortBy ? [...page].sort(compareBy(plan.sortBy.field, plan.sortBy.direction)) : page);
  const { page } = plan;
  if (page.kind === 'groups') {
    const groups = [...groupsBy(ranked, page.field)]
      .slice(page.offset, page.offset + page.groups)
      .map(([value, members]): [string, Candidate[]] => [value, sorted(members.slice(0, page.limit))]);
    return { total: ranked.length, facets, shown: { kind: 'groups', field: page.field, groupLimit: page.groups, groups } };
  }
  return { total: ranked.length, facets, shown: { kind: 'results', results: sorted(ranked.slice(page.offset, page.offset + page.limit)) } };
}

/** The images a page shows, whose `value_map` the answer needs. */
export const shownImages = ({ shown }: PageSelection): ImageSummary[] =>
  (shown.kind === 'results' ? shown.results : shown.groups.flatMap(([, members]) => members)).map(({ image }) => image);

/** The wire objects of a page, with `value_map` from the metadata read for the images shown. */
export function toSearchPage(selection: PageSelection, plan: SearchPlan, shownMetadata: Map<number, ImageMetadata>): SearchPage {
  const item = ({ image, score }: Candidate): ResultItem => ({
    im_name: image.im_name,
    ...(plan.withScore ? { score: toScore(score) } : {}),
    ...(plan.valueMap ? { value_map: toValueMap(shownMetadata.get(image.id) ?? {}, plan.valueMap.fields) } : {}),
  });
  const facets = selection.facets ? { facets: selection.facets } : {};
  const { shown } = selection;
  if (shown.kind === 'groups') {
    return {
      total: selection.total,
      group_by_key: shown.field,
      group_limit: shown.groupLimit,
      group_results: shown.groups.map(([value, members]) => ({ group_by_value: value, result: members.map(item) })),
      ...facets,
    };
  }
  return { total: selection.total, result: shown.results.map(item), ...facets };
}
