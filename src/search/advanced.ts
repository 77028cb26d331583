import { decimal, flag, integer, list, text } from '../http/param-schema';

/** docs/api.md, Advanced parameters: the advanced parameters every search endpoint shares (readSearchOptions reads and checks them). */
export const ADVANCED = {
  fq: list(
    'Filter on a searchable metadata field, `<field>:<value>` (exact strings joined with OR, ' +
      '`<min>,<max>` ranges for numbers, AND/OR/NOT queries for text). Repeatable, one per field; a field not in ' +
      'the schema is ignored.',
  ),
  fl: list('Metadata fields to return in `value_map`, repeatable or comma-separated (not text fields).'),
  get_all_fl: flag('Returns every fetchable metadata field in `value_map`.'),
  score: flag('Each result includes its `score`.'),
  score_min: decimal({ min: 0, max: 1, default: 0 }, 'Lowest score returned.'),
  score_max: decimal({ min: 0, max: 1, default: 1 }, 'Highest score returned; not below `score_min`.'),
  dedup: flag('Removes near-duplicate results.'),
  dedup_score_threshold: decimal(
    { min: 0, max: 1, default: 0 },
    'Least score gap between adjacent results: a result within it of the one before is dropped. Only read when `dedup=true`.',
  ),
  facets: list('Fields to facet on, comma-separated or repeated; `*` for every searchable field.'),
  facets_limit: integer({ min: 1, max: 1000, default: 10 }, 'Values per facet. Only read with `facets`.'),
  facets_show_count: flag('Facet values carry their counts (over the top 1000 results). Only read with `facets`.'),
  group_by: text('Groups the results by this searchable field.'),
  group_limit: integer({ min: 1, max: 100, default: 10 }, 'Groups per page. Only read with `group_by`.'),
  sort_by: text('Sorts each page by a metadata field: `<field>:asc` or `<field>:desc`. Unknown fields are ignored.'),
  qinfo: flag('The response describes the query in `qinfo`.'),
};
