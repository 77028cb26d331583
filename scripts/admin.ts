import { readFileSync } from 'node:fs';
import { adminConfigFromEnv, adminRequest, type Field } from './lib/admin-client.ts';

const USAGE = `Usage: npm run admin -- <command>

  create-app <name> [embed_model]           create an application (on EMBED_MODEL unless named); prints its keys
                                            (shown once)
  get-app <app_id>                          show an application and its schema
  set-schema <app_id> <name:type[:searchable]>...
                                            replace the schema; type is string, int, float or text
  set-limits <app_id> <limit>=<number|none>...
                                            image_limit (collection size), pending_limit (images waiting to be
                                            processed), searches_per_minute, upload_bytes_per_minute
  reindex <app_id> <embed_model>            re-embed the application's images by another model of EMBED_MODELS;
                                            searches keep the current one until every image is done (asked again,
                                            one under way goes on, a failed one resumes)
  reindex-status <app_id>                   the application's latest reindex and its progress
  set-product-types <app_id> <file.json>    the application's own detectable types: the file holds
                                            {"types": [{"type", "prompts"?, "attributes_list"?}]}
  reset-product-types <app_id>              back to the service's default types
  tune <app_id> <label_field> [always]      tune the application's search on a field labelling its images; it moves
                                            to the tuning unless held-out precision@5 would fall (or: always)
  tune-status <app_id>                      the latest tuning, its state and held-out report
  untune <app_id>                           back to the untuned search
  placement                                 every database and vector index with what it holds (docs/scale.md)
  move <app_id> <database>                  move the application's catalog to another D1 database (D1_DATABASES);
                                            its writes are answered busy while its rows are copied
  move-status <app_id>                      the application's latest move and its progress

Environment: API_URL (default http://127.0.0.1:$PORT; PORT unset: the running npm start's, else 8787), ADMIN_TOKEN
(default dev-admin-token).`;

function parseField(spec: string): Field {
  const [name = '', type = '', flag] = spec.split(':');
  if (!['string', 'int', 'float', 'text'].includes(type) || (flag !== undefined && flag !== 'searchable')) {
    throw new Error(`bad field "${spec}": expected name:type or name:type:searchable`);
  }
  return { name, type: type as Field['type'], searchable: flag === 'searchable' };
}

const LIMITS = ['image_limit', 'pending_limit', 'searches_per_minute', 'upload_bytes_per_minute'];

function parseLimit(spec: string): [string, number | null] {
  const [name = '', value = ''] = spec.split('=');
  if (!LIMITS.includes(name) || !/^(\d+|none)$/.test(value)) {
    throw new Error(`bad limit "${spec}": expected <${LIMITS.join('|')}>=<number|none>`);
  }
  return [name, value === 'none' ? null : Number(value)];
}

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  const config = adminConfigFromEnv();
  // On stderr: the answer on stdout stays JSON.
  console.error(`Using ${config.baseUrl} (${config.from})`);
  let reply: { status: number; body: unknown };
  if (command === 'create-app' && (rest.length === 1 || rest.length === 2)) {
    const [name, embedModel] = rest;
    reply = await adminRequest(config, 'POST', '/admin/apps', { name, ...(embedModel ? { embed_model: embedModel } : {}) });
  } else if (command === 'get-app' && rest.length === 1) {
    reply = await adminRequest(config, 'GET', `/admin/apps/${encodeURIComponent(rest[0]!)}`);
  } else if (command === 'set-schema' && rest.length >= 1) {
    const [appId, ...fields] = rest;
    reply = await adminRequest(config, 'PUT', `/admin/apps/${encodeURIComponent(appId!)}/schema`, { fields: fields.map(parseField) });
  } else if (command === 'set-limits' && rest.length >= 2) {
    const [appId, ...limits] = rest;
    reply = await adminRequest(config, 'PATCH', `/admin/apps/${encodeURIComponent(appId!)}`, Object.fromEntries(limits.map(parseLimit)));
  } else if (command === 'reindex' && rest.length === 2) {
    const [appId, embedModel] = rest;
    reply = await adminRequest(config, 'POST', `/admin/apps/${encodeURIComponent(appId!)}/reindex`, { embed_model: embedModel });
  } else if (command === 'reindex-status' && rest.length === 1) {
    reply = await adminRequest(config, 'GET', `/admin/apps/${encodeURIComponent(rest[0]!)}/reindex`);
  } else if (command === 'set-product-types' && rest.length === 2) {
    const [appId, file] = rest;
    reply = await adminRequest(config, 'PUT', `/admin/apps/${encodeURIComponent(appId!)}/product-types`, JSON.parse(readFileSync(file!, 'utf8')) as unknown);
  } else if (command === 'reset-product-types' && rest.length === 1) {
    reply = await adminRequest(config, 'DELETE', `/admin/apps/${encodeURIComponent(rest[0]!)}/product-types`);
  } else if (command === 'tune' && (rest.length === 2 || (rest.length === 3 && rest[2] === 'always'))) {
    const [appId, labelField, apply] = rest;
    reply = await adminRequest(config, 'POST', `/admin/apps/${encodeURIComponent(appId!)}/tune`, { label_field: labelField, ...(apply && { apply }) });
  } else if (command === 'tune-status' && rest.length === 1) {
    reply = await adminRequest(config, 'GET', `/admin/apps/${encodeURIComponent(rest[0]!)}/tune`);
  } else if (command === 'untune' && rest.length === 1) {
    reply = await adminRequest(config, 'DELETE', `/admin/apps/${encodeURIComponent(rest[0]!)}/tune`);
  } else if (command === 'placement' && rest.length === 0) {
    reply = await adminRequest(config, 'GET', '/admin/placement');
  } else if (command === 'move' && rest.length === 2) {
    const [appId, database] = rest;
    reply = await adminRequest(config, 'POST', `/admin/apps/${encodeURIComponent(appId!)}/move`, { database });
  } else if (command === 'move-status' && rest.length === 1) {
    reply = await adminRequest(config, 'GET', `/admin/apps/${encodeURIComponent(rest[0]!)}/move`);
  } else {
    console.error(USAGE);
    return 2;
  }
  console.log(JSON.stringify(reply.body, null, 2));
  return reply.status < 400 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
