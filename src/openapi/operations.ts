import { z } from 'zod';
import { APP_PATH, createAppBody, reindexBody, schemaBody, settingsBody } from '../admin/bodies';
import type { ParamShape } from '../http/param-schema';
import { INSERT_STATUS, MAX_REMOVE_NAMES, REMOVED_IMAGE, TRANSACTION } from '../ingest/data-params';
import { INSERT_IMAGE, INSERT_LIMITS } from '../ingest/insert-request';
import { ADVANCED } from '../search/advanced';
import { COLOR_QUERY } from '../search/color-query';
import { DETECTION } from '../search/detection';
import { PAGING } from '../search/paging';
import { QUERY_IMAGE } from '../search/query-image';
import { REGION } from '../search/region';
import { SIMILAR_QUERY } from '../search/similar-query';
import { MODEL_READS_NO_TEXT, STEERING_TEXT, TEXT_QUERY } from '../search/text-query';
import * as responses from './responses';

/**
 * Every endpoint of the Worker, as the OpenAPI document describes it: the parameter shapes are the ones the
 * endpoints read their parameters through, so the document cannot say other than what they check.
 */
export type Operation = {
  method: 'get' | 'post' | 'put' | 'patch';
  /** OpenAPI's form: `{trans_id}`, not Hono's `:trans_id`. */
  path: string;
  operationId: string;
  tag: 'Search' | 'Data' | 'Admin' | 'Reference';
  summary: string;
  description?: string;
  /** client: Basic or the app key; backend: Basic only; admin: the admin token. */
  auth: 'client' | 'backend' | 'admin' | 'none';
  pathParams?: ParamShape;
  query?: ParamShape;
  body?: { media: string[]; schema: z.ZodObject } | { media: string[]; indexed: z.ZodObject };
  /** The success status and body; JSON unless `media` says otherwise. */
  success: { status: 200 | 201 | 202; schema?: z.ZodType; media?: string; description: string };
  /**
   * How a failure is answered: `envelope`, the API's way, with HTTP 200 and this body (docs/decisions.md); or the
   * admin API's and the console image's way, with these HTTP statuses.
   */
  failure: { envelope: z.ZodType } | { statuses: number[] };
};

const FORMS = ['application/x-www-form-urlencoded', 'multipart/form-data'];

const { page, limit, result_limit } = PAGING;
const { group_by, group_limit, ...advancedWithoutGroups } = ADVANCED;
const { detection_limit, ...detection } = DETECTION;

const inEnvelope = (envelope: z.ZodType) => ({ envelope });
const httpErrors = (...statuses: number[]) => ({ statuses: [400, 401, ...statuses, 500] });

const similarQuery = { ...SIMILAR_QUERY, page, limit, ...ADVANCED };
const uploadSearchParams = { box: REGION.box, ...detection, ...STEERING_TEXT, page, limit, ...ADVANCED };
const discoverSearchParams = { ...REGION, ...detection, detection_limit, ...STEERING_TEXT, page, result_limit, ...advancedWithoutGroups };
const textSearchParams = { ...TEXT_QUERY, page, limit, ...ADVANCED };
const TEXT_SEARCH_DESCRIPTION =
  "Not in the spec. Images whose embedding, or a detected object's, is nearest the text's by the application's " +
  `model, each image at its best match. A model without a text tower answers \`fail\`: "${MODEL_READS_NO_TEXT}"`;
const { image: _file, ...imageByReference } = QUERY_IMAGE;

export const OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: '/search',
    operationId: 'search',
    tag: 'Search',
    summary: 'Visually similar images to one in the collection',
    description: 'Spec 4.4. The query image itself is not among the results. `detection` is not read here.',
    auth: 'client',
    query: similarQuery,
    success: { status: 200, schema: responses.searchResponse, description: 'Results, best first.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'get',
    path: '/recommendation',
    operationId: 'recommendation',
    tag: 'Search',
    summary: 'Visually similar recommendations: `/search` under the name the official SDKs call',
    description: 'The same search as `/search`, answered as the original service answers it, with `method: search`.',
    auth: 'client',
    query: similarQuery,
    success: { status: 200, schema: responses.searchResponse, description: 'Results, best first.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'post',
    path: '/uploadsearch',
    operationId: 'uploadsearch',
    tag: 'Search',
    summary: 'Search by an uploaded image, an image URL or an earlier upload',
    description:
      'Spec 4.5. Exactly one of `image`, `im_url` and `im_id`. The primary detected object is searched, or the ' +
      'object at a zero-size `box`, or the area of a `box`; `q` steers it by a text (a model that reads text only).',
    auth: 'client',
    body: { media: FORMS, schema: z.object({ ...QUERY_IMAGE, ...uploadSearchParams }) },
    success: { status: 200, schema: responses.uploadSearchResponse, description: 'Results for the searched object.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'get',
    path: '/uploadsearch',
    operationId: 'uploadsearchByReference',
    tag: 'Search',
    summary: 'Search by an image URL or an earlier upload, as a GET',
    description: 'As `POST /uploadsearch`, with `im_url` or `im_id` (a file needs a POST).',
    auth: 'client',
    query: { ...imageByReference, ...uploadSearchParams },
    success: { status: 200, schema: responses.uploadSearchResponse, description: 'Results for the searched object.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'post',
    path: '/discoversearch',
    operationId: 'discoversearch',
    tag: 'Search',
    summary: 'Every detected object of an image, each with its own results',
    description: 'Spec 4.6. Exactly one of `image`, `im_url` and `im_id`; not both `box` and `point`; no `group_by`.',
    auth: 'client',
    body: { media: FORMS, schema: z.object({ ...QUERY_IMAGE, ...discoverSearchParams }) },
    success: { status: 200, schema: responses.discoverSearchResponse, description: 'Objects and their results.' },
    failure: inEnvelope(responses.discoverSearchFailure),
  },
  {
    method: 'get',
    path: '/discoversearch',
    operationId: 'discoversearchByReference',
    tag: 'Search',
    summary: 'Every detected object of an image given by URL or earlier upload, as a GET',
    description: 'As `POST /discoversearch`, with `im_url` or `im_id` (a file needs a POST).',
    auth: 'client',
    query: { ...imageByReference, ...discoverSearchParams },
    success: { status: 200, schema: responses.discoverSearchResponse, description: 'Objects and their results.' },
    failure: inEnvelope(responses.discoverSearchFailure),
  },
  {
    method: 'get',
    path: '/colorsearch',
    operationId: 'colorsearch',
    tag: 'Search',
    summary: 'Search by colour',
    description: 'Spec 4.7: images whose palette (or a detected object\'s) is nearest the asked colours.',
    auth: 'client',
    query: { ...COLOR_QUERY, page, limit, ...ADVANCED },
    success: { status: 200, schema: responses.colorSearchResponse, description: 'Results, best first.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'get',
    path: '/textsearch',
    operationId: 'textsearch',
    tag: 'Search',
    summary: 'Search by text',
    description: TEXT_SEARCH_DESCRIPTION,
    auth: 'client',
    query: textSearchParams,
    success: { status: 200, schema: responses.textSearchResponse, description: 'Results, best first.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'post',
    path: '/textsearch',
    operationId: 'textsearchByForm',
    tag: 'Search',
    summary: 'Search by text, the parameters in a form body',
    description: 'As `GET /textsearch`.',
    auth: 'client',
    body: { media: FORMS, schema: z.object(textSearchParams) },
    success: { status: 200, schema: responses.textSearchResponse, description: 'Results, best first.' },
    failure: inEnvelope(responses.searchFailure),
  },
  {
    method: 'post',
    path: '/insert',
    operationId: 'insert',
    tag: 'Data',
    summary: 'Add or update images',
    description:
      `Spec 4.1. Each image is sent as \`{key}[i]\` form parameters, \`i\` its 0-based index: at most ` +
      `${INSERT_LIMITS.maxImages} images of at most ${INSERT_LIMITS.maxKeysPerImage} keys each. Images are processed ` +
      'asynchronously: follow the transaction with `/insert/status`. An image already in the collection sent without ' +
      '`im_url` has only its given metadata fields changed (no download, no new embedding).',
    auth: 'backend',
    body: { media: FORMS, indexed: INSERT_IMAGE },
    success: { status: 200, schema: responses.insertResponse, description: '`warning` when some images were refused.' },
    failure: inEnvelope(responses.dataFailure),
  },
  {
    method: 'get',
    path: '/insert/status/{trans_id}',
    operationId: 'insertStatus',
    tag: 'Data',
    summary: 'Progress and errors of an insert transaction',
    description: 'Spec 4.2. There are ceil(fail_count / error_limit) pages of errors.',
    auth: 'backend',
    pathParams: TRANSACTION,
    query: INSERT_STATUS,
    success: { status: 200, schema: responses.insertStatusResponse, description: 'The transaction.' },
    failure: inEnvelope(responses.insertStatusFailure),
  },
  {
    method: 'post',
    path: '/remove',
    operationId: 'remove',
    tag: 'Data',
    summary: 'Remove images',
    description:
      `Spec 4.3. Names are sent as \`im_name[i]\`, at most ${MAX_REMOVE_NAMES} per call; ` +
      'search stops finding them at once.',
    auth: 'backend',
    body: { media: FORMS, indexed: REMOVED_IMAGE },
    success: { status: 200, schema: responses.removeResponse, description: '`warning` when a name was not found.' },
    failure: inEnvelope(responses.dataFailure),
  },
  {
    method: 'get',
    path: '/image',
    operationId: 'image',
    tag: 'Search',
    summary: 'The stored bytes of a collection image',
    description: 'The web console\'s thumbnails; not in the spec. Each counts as a call under `searches_per_minute`.',
    auth: 'client',
    query: SIMILAR_QUERY,
    success: { status: 200, media: 'image/*', description: 'The image as it was downloaded at insert.' },
    failure: httpErrors(404, 429),
  },
  {
    method: 'post',
    path: '/admin/apps',
    operationId: 'createApp',
    tag: 'Admin',
    summary: 'Create an application',
    auth: 'admin',
    body: { media: ['application/json'], schema: createAppBody },
    success: { status: 201, schema: responses.createdAppResponse, description: 'The new application and its keys.' },
    failure: httpErrors(),
  },
  {
    method: 'get',
    path: '/admin/apps/{app_id}',
    operationId: 'getApp',
    tag: 'Admin',
    summary: 'An application, its settings and schema (no secrets)',
    auth: 'admin',
    pathParams: APP_PATH,
    success: { status: 200, schema: responses.appResponse, description: 'The application.' },
    failure: httpErrors(404),
  },
  {
    method: 'patch',
    path: '/admin/apps/{app_id}',
    operationId: 'updateApp',
    tag: 'Admin',
    summary: 'Operator settings of an application',
    description:
      '`image_limit` (collection size), `pending_limit` (images waiting to be processed), `searches_per_minute` and ' +
      '`upload_bytes_per_minute` (calls of the searches and `/image`, and query-image bytes, uploaded or downloaded, a ' +
      'minute, past which they answer busy with `Retry-After`), null lifting one; ' +
      '`text_default_operator` between adjacent words of a text `fq`.',
    auth: 'admin',
    pathParams: APP_PATH,
    body: { media: ['application/json'], schema: settingsBody },
    success: { status: 200, schema: responses.appSettingsResponse, description: 'The application.' },
    failure: httpErrors(404),
  },
  {
    method: 'put',
    path: '/admin/apps/{app_id}/schema',
    operationId: 'replaceSchema',
    tag: 'Admin',
    summary: 'Replace the metadata schema of an application',
    auth: 'admin',
    pathParams: APP_PATH,
    body: { media: ['application/json'], schema: schemaBody },
    success: { status: 200, schema: responses.appSchemaResponse, description: 'The new schema.' },
    failure: httpErrors(404),
  },
  {
    method: 'post',
    path: '/admin/apps/{app_id}/reindex',
    operationId: 'startReindex',
    tag: 'Admin',
    summary: "Re-embed an application's images by another embedding model",
    description:
      "The stored originals are embedded again by `embed_model` into that model's indexes while searches keep using " +
      'the current one; once every image is in it, the application moves to it at once and the old vectors are ' +
      'deleted. Asked again, a reindex under way into the same model goes on; a failed one resumes.',
    auth: 'admin',
    pathParams: APP_PATH,
    body: { media: ['application/json'], schema: reindexBody },
    success: { status: 202, schema: responses.reindexResponse, description: 'The reindex and its progress.' },
    failure: httpErrors(404, 409),
  },
  {
    method: 'get',
    path: '/admin/apps/{app_id}/reindex',
    operationId: 'getReindex',
    tag: 'Admin',
    summary: "An application's latest reindex and its progress",
    auth: 'admin',
    pathParams: APP_PATH,
    success: { status: 200, schema: responses.reindexResponse, description: 'The reindex and its progress.' },
    failure: httpErrors(404),
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openapi',
    tag: 'Reference',
    summary: 'This document',
    auth: 'none',
    success: { status: 200, description: 'OpenAPI 3.1.' },
    failure: { statuses: [] },
  },
  {
    method: 'get',
    path: '/docs',
    operationId: 'docs',
    tag: 'Reference',
    summary: 'This document as a reference page',
    auth: 'none',
    success: { status: 200, media: 'text/html', description: 'HTML.' },
    failure: { statuses: [] },
  },
];
