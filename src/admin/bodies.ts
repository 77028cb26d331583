import { z } from 'zod';
import { MAX_EMBED_MODEL_ID, VOCABULARY_LIMITS, vocabularyType } from '@edge-image-search/contract/wire';
import { FIELD_TYPES } from '../storage/apps';

// The admin API's path parameter and JSON bodies (docs/decisions.md): its routes (routes/admin.ts) check them,
// /openapi.json shows them.

/** Field names as `/insert` parameters can carry them: no brackets, and not the two reserved keys. */
const FIELD_NAME = /^[A-Za-z0-9_\-.:]{1,64}$/;

/**
 * A JSON object of the admin API that refuses keys it does not know, naming them and those it knows: a misspelt key
 * (`{"image_limt": 5}`) must not answer 200 having changed nothing.
 */
const strictBody = <Shape extends z.ZodRawShape>(shape: Shape) =>
  z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}; the keys are ${Object.keys(shape).join(', ')}`
        : undefined,
  });

export const APP_PATH = { app_id: z.string().meta({ description: 'The `app_id` that `POST /admin/apps` answered.' }) };

const embedModel = z.string().min(1).max(MAX_EMBED_MODEL_ID).meta({ description: 'An embedding model id of the EMBED_MODELS setting.' });
export const createAppBody = strictBody({
  name: z.string().trim().min(1).max(200),
  embed_model: embedModel.optional().meta({ description: 'The model the application is put on: EMBED_MODEL by default.' }),
});
export const reindexBody = strictBody({ embed_model: embedModel });
export const schemaBody = strictBody({
  fields: z
    .array(
      strictBody({
        name: z
          .string()
          .regex(FIELD_NAME, 'field names use a-z, A-Z, 0-9, -, _, ., : (at most 64)')
          .refine((name) => name !== 'im_name' && name !== 'im_url', 'im_name and im_url are not metadata fields'),
        type: z.enum(FIELD_TYPES),
        searchable: z.boolean().default(false),
      }),
    )
    .max(30)
    .refine((fields) => new Set(fields.map((field) => field.name)).size === fields.length, 'field names must be unique'),
});

const limit = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional();
export const settingsBody = strictBody({
  image_limit: limit,
  pending_limit: limit,
  searches_per_minute: limit,
  upload_bytes_per_minute: limit,
  text_default_operator: z.enum(['AND', 'OR']).optional(),
});

/**
 * An application's own detectable types (docs/decisions.md, "Product types and attributes"): each type, its prompts
 * (an open-vocabulary detector only) and the values of its attributes; checked against the loaded detector by
 * routes/admin.ts.
 */
export const productTypesBody = strictBody({
  types: z
    .array(strictBody(vocabularyType.shape))
    .min(1, 'give at least one type')
    .max(VOCABULARY_LIMITS.types, `at most ${VOCABULARY_LIMITS.types} types`)
    .refine((types) => new Set(types.map(({ type }) => type.toLowerCase())).size === types.length, 'type names must be unique (whatever their case)'),
});
export const moveBody = strictBody({
  database: z.string().min(1).max(64).meta({ description: 'The D1 binding (one of D1_DATABASES) to move the application\'s catalog to.' }),
});
export const tuneBody = strictBody({
  label_field: z.string().min(1).max(64).meta({ description: "A field of the application's schema whose values label its images (e.g. `category`)." }),
  apply: z
    .enum(['better', 'always'])
    .optional()
    .meta({ description: '`better` (default): the application moves to the tuning only if held-out precision@5 does not fall; `always`.' }),
});
