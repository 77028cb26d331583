import { z } from 'zod';
import { DATA_ERRORS, GENERAL, SEARCH_ERRORS } from '../http/messages';
import { FIELD_TYPES } from '../storage/apps';
import { vocabularyType } from '@edge-image-search/contract/wire';

/**
 * The response bodies, as zod schemas for the OpenAPI document. Nothing validates responses at run time: the
 * OpenAPI test parses real responses with these schemas, so they cannot drift from what the endpoints answer.
 */

/** The status of a success: `OK`, or for an insert or remove that did only part, `warning` (docs/decisions.md). */
const succeeded = z.literal('OK');
const succeededInPart = z.enum(['OK', 'warning']).meta({ description: '`warning`: partial success (docs/decisions.md).' });
const reqid = z.string().meta({ description: 'Unique id of the call, also in the `X-Log-ID` header.' });

const searchErrors = z.array(z.string()).meta({
  description: 'Empty on success; otherwise general and search messages, to the letter.',
  examples: [[...Object.values(GENERAL), ...Object.values(SEARCH_ERRORS)].slice(0, 3)],
});

const dataErrorEntry = z.object({
  index: z.int().optional().meta({ description: 'The image index `i` of an entry about one image.' }),
  im_name: z.string().optional(),
  error_code: z.int().meta({
    description: `Numbered data errors: ${Object.values(DATA_ERRORS)
      .map((error) => error.code)
      .join(', ')}, 106, 109.`,
  }),
  error_message: z.string(),
});
const dataErrors = z.array(z.union([dataErrorEntry, z.string()])).meta({
  description:
    'Empty on success. Numbered data errors are objects with `error_code`; the general messages of ' +
    '7.1 and parameter errors are plain strings.',
});

/**
 * What a failed call answers, with HTTP 200 like every answer of the API (docs/decisions.md): the envelope and the
 * endpoint's answer with nothing in it, so that a client reading the success fields finds them.
 */
const failed = { status: z.literal('fail'), method: z.string() };
export const searchFailure = z.object({
  ...failed,
  error: searchErrors,
  page: z.int(),
  limit: z.int(),
  total: z.literal(0),
  result: z.array(z.never()),
  reqid,
});
export const discoverSearchFailure = z.object({
  ...failed,
  error: searchErrors,
  page: z.int(),
  result_limit: z.int(),
  objects: z.array(z.never()),
  reqid,
});
export const dataFailure = z.object({ ...failed, error: dataErrors, total: z.literal(0), result: z.array(z.never()) });
export const insertStatusFailure = z.object({ ...failed, error: dataErrors, result: z.array(z.never()) });
/** The admin API and the console's image endpoint answer failures with their HTTP status. */
export const httpFailure = z.object({ ...failed, error: z.array(z.string()) });

const resultItem = z.object({
  im_name: z.string(),
  score: z.number().min(0).max(1).optional().meta({ description: 'With `score=true`.' }),
  value_map: z
    .record(z.string(), z.string())
    .optional()
    .meta({ description: 'Whenever `fl` or `get_all_fl=true` selects a field: the selected fields the image has a value for, `{}` when none.' }),
});

const facet = z.union([
  z.object({ key: z.string(), items: z.array(z.object({ value: z.string(), count: z.int().optional() })) }),
  z.object({ key: z.string(), range: z.object({ min: z.number(), max: z.number() }).nullable() }),
]);

/** `total`, then `result` or the grouped results (with `group_by`), and `facets` (with `facets`). */
const searchPage = {
  total: z.int().meta({ description: 'Results in all pages, at most 1000.' }),
  result: z.array(resultItem).optional().meta({ description: 'Without `group_by`.' }),
  group_by_key: z.string().optional(),
  group_limit: z.int().optional(),
  group_results: z
    .array(z.object({ group_by_value: z.string(), result: z.array(resultItem) }))
    .optional()
    .meta({ description: 'With `group_by`.' }),
  facets: z.array(facet).optional(),
};

const qinfo = z.record(z.string(), z.unknown()).optional().meta({ description: 'With `qinfo=true`: the query.' });

const detectedObject = {
  type: z.string(),
  attributes: z
    .record(z.string(), z.array(z.string()))
    .meta({ description: "Each attribute of its type's `attributes_list` judged: a list of the value chosen, e.g. `{\"color\": [\"red\"]}`." }),
  score: z.number().meta({ description: 'Detection confidence.' }),
  box: z.array(z.int()).length(4).meta({ description: '`[x1, y1, x2, y2]` in the original image\'s pixels.' }),
};
const typeList = z
  .array(z.object({ type: z.string(), attributes_list: z.record(z.string(), z.array(z.string())).meta({ description: 'The values each attribute may take.' }) }))
  .meta({ description: "Every type the application's detection can report: its own types, else the service's." });

const searchEnvelope = (method: string) => ({ status: succeeded, method: z.literal(method), error: searchErrors });

export const searchResponse = z.object({
  ...searchEnvelope('search'),
  page: z.int(),
  limit: z.int(),
  ...searchPage,
  qinfo,
  reqid,
});

export const colorSearchResponse = searchResponse.extend(searchEnvelope('colorsearch'));

export const textSearchResponse = searchResponse.extend(searchEnvelope('textsearch'));

export const uploadSearchResponse = z.object({
  ...searchEnvelope('uploadsearch'),
  page: z.int(),
  limit: z.int(),
  product_types: z.array(z.object(detectedObject)).meta({ description: 'The detected object searched, if any.' }),
  product_types_list: typeList,
  ...searchPage,
  im_id: z.string().meta({ description: 'Sends this image again as `im_id`, without a new upload.' }),
  qinfo,
  reqid,
});

export const discoverSearchResponse = z.object({
  ...searchEnvelope('discoversearch'),
  result_limit: z.int(),
  detection_limit: z.int(),
  page: z.int(),
  objects: z.array(z.object({ ...detectedObject, ...searchPage })).meta({ description: 'Objects and their results.' }),
  object_types_list: typeList,
  im_id: z.string(),
  qinfo,
  reqid,
});

const dataEnvelope = (method: string) => ({ status: succeededInPart, method: z.literal(method) });

export const insertResponse = z.object({
  ...dataEnvelope('insert'),
  trans_id: z.int().optional().meta({ description: 'Follow it with `/insert/status/{trans_id}`.' }),
  total: z.int().meta({ description: 'Images accepted.' }),
  result: z.array(z.unknown()),
  error: dataErrors,
  ignored_fields: z
    .array(z.object({ index: z.int(), im_name: z.string(), fields: z.array(z.string()) }))
    .optional()
    .meta({
      description:
        "Present only when an accepted image named fields outside the application's schema: its other fields are " +
        'stored, these are not (docs/decisions.md, Fields outside the schema).',
    }),
});

export const insertStatusResponse = z.object({
  status: succeeded,
  method: z.literal('insert/status'),
  result: z.array(
    z.object({
      trans_id: z.int(),
      processed_percent: z.int().min(0).max(100),
      success_count: z.int(),
      fail_count: z.int(),
      total: z.int(),
      error_list: z.array(z.object({ im_name: z.string(), error_code: z.int(), error_message: z.string() })),
      error_page: z.int(),
      error_limit: z.int(),
      start_time: z.string().meta({ examples: ['2015-01-02T03:04:05.678+0000'] }),
      update_time: z.string(),
    }),
  ),
  error: dataErrors,
});

export const removeResponse = z.object({
  ...dataEnvelope('remove'),
  total: z.int().meta({ description: 'Images removed.' }),
  result: z.array(z.unknown()),
  error: dataErrors,
});

/** An application's own detectable types; null: the service's default types (PUT /admin/apps/{app_id}/product-types). */
const productTypes = z.array(vocabularyType).nullable().meta({ description: "The application's own detectable types; null: the service's defaults." });

const adminApp = {
  app_id: z.string(),
  name: z.string(),
  access_key: z.string(),
  created_at: z.string(),
  image_limit: z.int().nullable(),
  pending_limit: z.int().nullable(),
  searches_per_minute: z.int().nullable(),
  upload_bytes_per_minute: z.int().nullable(),
  text_default_operator: z.enum(['AND', 'OR']),
  embed_model: z.string().meta({ description: "The embedding model the application's vectors belong to." }),
  product_types: productTypes,
  tuning: z.int().nullable().meta({ description: 'The version of the tuning its searches use (`POST /admin/apps/{app_id}/tune`); null: untuned.' }),
  placement: z
    .object({
      database: z.string().meta({ description: 'The D1 binding its catalog is in.' }),
      moving: z.string().optional().meta({ description: 'While a move copies it: the database it is moving to (POST /admin/apps/{app_id}/move).' }),
      indexes: z.record(z.string(), z.array(z.string())).meta({
        description: "Per index group (named by its first index), the index of each shard; empty: made before placement, in each group's first.",
      }),
    })
    .meta({ description: 'Where the application lives (docs/decisions.md, "Placement").' }),
};
const schemaFields = z.object({
  fields: z.array(z.object({ name: z.string(), type: z.enum(FIELD_TYPES), searchable: z.boolean() })),
});

export const createdAppResponse = z.object({
  status: succeeded,
  app_id: z.string(),
  name: z.string(),
  access_key: z.string(),
  secret_key: z.string().meta({ description: 'Shown only here: it is stored hashed.' }),
  app_key: z.string().meta({ description: 'For browser and mobile clients: shown only here.' }),
});
export const placementResponse = z.object({
  status: succeeded,
  databases: z.array(z.object({ name: z.string(), applications: z.int(), images: z.int(), bytes: z.int() })),
  indexes: z.array(z.object({ name: z.string(), model: z.string().nullable(), vectors: z.int(), namespaces: z.int() })),
});
export const appResponse = z.object({ status: succeeded, ...adminApp, schema: schemaFields });
export const appSettingsResponse = z.object({ status: succeeded, ...adminApp });
export const moveResponse = z.object({
  status: succeeded,
  app_id: z.string(),
  database: z.string().meta({ description: 'The database its catalog is read from now.' }),
  move: z.object({
    from_database: z.string(),
    to_database: z.string(),
    state: z.enum(['copying', 'cleaning', 'done', 'failed']).meta({
      description:
        "`copying`: its writes are held (answered busy, to be sent again) while its rows are copied, searches read from_database; " +
        '`cleaning`: it is on to_database, its rows in from_database are deleted; `done`; `failed` (see `error`).',
    }),
    rows_copied: z.int(),
    error: z.string().nullable(),
    started_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
  }),
});
export const reindexResponse = z.object({
  status: succeeded,
  app_id: z.string(),
  embed_model: z.string().meta({ description: 'The model searches use now.' }),
  reindex: z.object({
    from_model: z.string(),
    to_model: z.string(),
    state: z.enum(['embedding', 'retiring', 'done', 'failed']).meta({
      description:
        '`embedding`: images are embedded again by to_model while searches use from_model; `retiring`: the ' +
        "application is on to_model and from_model's vectors of it are deleted; `done`; `failed` (see `error`).",
    }),
    images_total: z.int(),
    images_done: z.int().meta({ description: 'Images whose vectors are in to_model.' }),
    error: z.string().nullable(),
    started_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
  }),
});
const precisionBeforeAfter = z.object({
  before: z.number().nullable().meta({ description: 'Untuned: the share of the first 5 results of each held-out query that carry its label.' }),
  after: z.number().nullable().meta({ description: 'Tuned, the same queries.' }),
});
export const tuningResponse = z.object({
  status: succeeded,
  app_id: z.string(),
  embed_model: z.string(),
  tuned: z.boolean().meta({ description: 'Whether searches use a tuning now.' }),
  tuning: z.object({
    version: z.int(),
    label_field: z.string(),
    apply: z.enum(['better', 'always']),
    state: z.enum(['running', 'done', 'failed']),
    phase: z.enum(['fitting', 'projecting', 'evaluating', 'retiring']).nullable().meta({
      description:
        "While running: `fitting` (the labelled images' stored vectors are read), `projecting` (every image's vectors " +
        'are mapped), `evaluating` (held-out images are searched), `retiring` (untuned, not applied or failed: its vectors are deleted).',
    }),
    applied: z.boolean().nullable().meta({ description: 'Whether the application moved to it; null until decided.' }),
    classes: z.int().meta({ description: 'Labels fitted: the most frequent values with 3 labelled images or more (at most 256).' }),
    labelled: z.int().meta({ description: 'Images with a value of the field when it began.' }),
    fitted: z.int().meta({ description: 'Labelled images whose vectors were fitted (the held-out ones never are).' }),
    held_out: z.object({
      share: z.number().meta({ description: 'The share of labelled images held out, chosen by their name (docs/decisions.md).' }),
      queries: z.int().meta({ description: 'Held-out images searched (at most 200).' }),
      precision_at_5: precisionBeforeAfter,
    }),
    error: z.string().nullable(),
    started_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
  }),
});
export const appSchemaResponse = z.object({ status: succeeded, app_id: z.string(), schema: schemaFields });

/** `GET /images`: a page of the application's catalog, and its schema (the web console's Catalog page). */
export const catalogResponse = z.object({
  ...searchEnvelope('images'),
  page: z.int(),
  limit: z.int(),
  total: z.int().meta({ description: 'Images in the collection.' }),
  result: z.array(
    z.object({
      im_name: z.string(),
      value_map: z.record(z.string(), z.string()).optional().meta({ description: 'Its values of the fields not of type text.' }),
    }),
  ),
  app_id: z.string(),
  schema: schemaFields,
  product_types: productTypes,
  reqid,
});
