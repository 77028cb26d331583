import type { JsonSchema } from './document';

/**
 * The reference page: the OpenAPI document rendered as HTML by the Worker itself. It reads nothing but the document,
 * so it shows exactly what /openapi.json says, and it loads nothing from anywhere (no script, no font, no CDN).
 */

type Row = { name: string; schema: JsonSchema; required: boolean; location?: string };

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (value: unknown): string => String(value ?? '').replace(/[&<>"']/g, (char) => ENTITIES[char]!);
/** Code spans are the only markup the descriptions use. */
const prose = (text: unknown): string => escape(text).replace(/`([^`]+)`/g, '<code>$1</code>');
const code = (value: unknown): string =>
  `<code>${escape(typeof value === 'string' ? value : JSON.stringify(value))}</code>`;

const asSchema = (value: unknown): JsonSchema => (value && typeof value === 'object' ? (value as JsonSchema) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const entries = (value: unknown): [string, JsonSchema][] =>
  Object.entries(asSchema(value)).map(([key, item]) => [key, asSchema(item)]);

function table(head: string[], rows: string[][]): string {
  const line = (row: string[], tag: string) => `<tr>${row.map((cell) => `<${tag}>${cell}</${tag}>`).join('')}</tr>`;
  const body = rows.map((row) => line(row, 'td')).join('');
  return `<table><thead>${line(head, 'th')}</thead><tbody>${body}</tbody></table>`;
}

function typeOf(schema: JsonSchema): string {
  if (typeof schema.$ref === 'string') {
    const name = escape(schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1));
    return `<a href="#schema-${name}">${name}</a>`;
  }
  if (schema.const !== undefined) return code(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map(code).join(' | ');
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) return options.map((option) => typeOf(asSchema(option))).join(' | ');
  if (schema.type === 'array') return `array of ${typeOf(asSchema(schema.items))}`;
  if (schema.format === 'binary') return 'file';
  return escape(schema.type ?? 'any');
}

const count = (bound: unknown, what: string): string => (bound === 1 ? `1 ${what}` : `${bound} ${what}s`);

function constraints(schema: JsonSchema): string {
  const { minimum, maximum, minLength, maxLength, minItems, maxItems } = schema;
  const said = [
    minimum !== undefined || maximum !== undefined ? `${minimum ?? '…'} to ${maximum ?? '…'}` : '',
    minLength !== undefined ? `at least ${count(minLength, 'character')}` : '',
    maxLength !== undefined ? `at most ${count(maxLength, 'character')}` : '',
    minItems !== undefined ? `at least ${count(minItems, 'value')}` : '',
    maxItems !== undefined ? `at most ${count(maxItems, 'value')}` : '',
  ].filter(Boolean);
  const pattern = schema.pattern ?? asSchema(schema.items).pattern;
  return [...said.map(escape), ...(pattern === undefined ? [] : [`matches ${code(pattern)}`])].join('; ');
}

/** The fields of an object schema, nested objects (and objects in arrays) flattened as `a.b` and `a[].b`. */
function fieldRows(schema: JsonSchema, prefix = '', depth = 0): Row[] {
  const required = new Set(list(schema.required));
  const fields: Row[] = [
    ...entries(schema.properties).map(([name, field]) => ({ name, schema: field, required: required.has(name) })),
    // Indexed form fields carry their display name as title (`im_name[i]`); item 0 says whether one is required.
    ...entries(schema.patternProperties).map(([pattern, field]) => ({
      name: String(field.title ?? pattern),
      schema: field,
      required: required.has(String(field.title).replace('[i]', '[0]')),
    })),
  ];
  return fields.flatMap((field) => {
    const row = { ...field, name: prefix + field.name };
    const items = asSchema(field.schema.items);
    if (depth < 3 && field.schema.properties) return [row, ...fieldRows(field.schema, `${row.name}.`, depth + 1)];
    if (depth < 3 && items.properties) return [row, ...fieldRows(items, `${row.name}[].`, depth + 1)];
    return [row];
  });
}

function fieldTable(rows: Row[], withLocation: boolean): string {
  if (rows.length === 0) return '<p>None.</p>';
  const head = ['Name', ...(withLocation ? ['In'] : []), 'Type', 'Required', 'Default', 'Constraints', 'Description'];
  return table(
    head,
    rows.map((row) => [
      code(row.name),
      ...(withLocation ? [escape(row.location)] : []),
      typeOf(row.schema),
      row.required ? 'yes' : '',
      row.schema.default === undefined ? '' : code(row.schema.default),
      constraints(row.schema),
      prose(row.schema.description),
    ]),
  );
}

const SCHEMES: Record<string, string> = {
  basicAuth: 'HTTP Basic',
  appKey: 'App key',
  adminToken: 'Admin token',
};

function security(requirements: unknown): string {
  const names = list(requirements).flatMap((requirement) => Object.keys(asSchema(requirement)));
  return names.length === 0 ? 'none' : names.map((name) => prose(SCHEMES[name] ?? name)).join(' or ');
}

function operation(path: string, method: string, item: JsonSchema): string {
  const parameters = list(item.parameters).map((parameter): Row => {
    const { name, in: location, required, description, schema } = asSchema(parameter);
    const shown = { description, ...asSchema(schema) };
    return { name: String(name), location: String(location), required: required === true, schema: shown };
  });
  const bodies = entries(asSchema(item.requestBody).content).map(
    ([media, content]) => `<h4>Body: ${code(media)}</h4>${fieldTable(fieldRows(asSchema(content.schema)), false)}`,
  );
  const responses = entries(item.responses).map(([status, response]) => [
    escape(status),
    prose(response.description),
    entries(response.content)
      .map(([media, content]) => (content.schema ? typeOf(asSchema(content.schema)) : code(media)))
      .join(', '),
  ]);
  return `<section id="${escape(item.operationId)}">
<h3><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code></h3>
<p><strong>${prose(item.summary)}</strong></p>${item.description ? `<p>${prose(item.description)}</p>` : ''}
<p>Authentication: ${security(item.security)}.</p>
${parameters.length > 0 || bodies.length === 0 ? `<h4>Parameters</h4>${fieldTable(parameters, true)}` : ''}
${bodies.join('\n')}
<h4>Responses</h4>${table(['Status', 'Meaning', 'Body'], responses)}
</section>`;
}

const STYLE = [
  'body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem;color:#1d2430}',
  'h2{border-bottom:2px solid #d8dee8;padding-bottom:.3rem;margin-top:2.5rem}',
  'section{border-top:1px solid #e3e7ee;padding-top:.5rem;margin-top:1.5rem}',
  'code{font:13px ui-monospace,monospace;background:#f2f4f8;padding:0 .2rem}',
  'table{border-collapse:collapse;width:100%;margin:.5rem 0}th{background:#f2f4f8}',
  'th,td{border:1px solid #d8dee8;padding:.3rem .5rem;text-align:left;vertical-align:top}',
  '.method{display:inline-block;min-width:4rem;text-align:center;border-radius:4px;color:#fff;font-size:13px}',
  '.get{background:#2f7d4f}.post{background:#2f5f9e}.put{background:#8a5a00}.patch{background:#7a3f9e}',
  'nav ul{columns:2}',
].join('\n');

/** The whole page for a document. */
export function renderReference(document: JsonSchema): string {
  const info = asSchema(document.info);
  const components = asSchema(document.components);
  const operations = entries(document.paths).flatMap(([path, item]) =>
    entries(item).map(([method, detail]) => ({ path, method, detail, tag: list(detail.tags)[0] })),
  );
  const byTag = list(document.tags).map((value) => {
    const tag = asSchema(value);
    const ofTag = operations.filter((entry) => entry.tag === tag.name);
    return `<h2 id="tag-${escape(tag.name)}">${escape(tag.name)}</h2><p>${prose(tag.description)}</p>
${ofTag.map((entry) => operation(entry.path, entry.method, entry.detail)).join('\n')}`;
  });
  const nav = operations.map(({ path, method, detail }) => {
    const label = `${escape(method.toUpperCase())} ${escape(path)}`;
    return `<li><a href="#${escape(detail.operationId)}">${label}</a></li>`;
  });
  const schemes = entries(components.securitySchemes).map(([name, scheme]) => {
    const carrier = scheme.in ? ` Sent as ${code(scheme.name)} (${escape(scheme.in)}).` : '';
    return `<li>${prose(SCHEMES[name] ?? name)}: ${prose(scheme.description)}${carrier}</li>`;
  });
  const schemas = entries(components.schemas).map(([name, schema]) => {
    const id = escape(name);
    return `<section id="schema-${id}"><h3>${id}</h3>${fieldTable(fieldRows(schema), false)}</section>`;
  });
  const description = String(info.description ?? '').split('\n\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(info.title)} reference</title><style>${STYLE}</style></head>
<body><header><h1>${escape(info.title)}</h1>
<p>OpenAPI ${escape(document.openapi)}, document version ${escape(info.version)}:
<a href="/openapi.json">openapi.json</a></p>
${description.map((paragraph) => `<p>${prose(paragraph)}</p>`).join('')}
<h2>Authentication</h2><ul>${schemes.join('')}</ul></header>
<nav><h2>Endpoints</h2><ul>${nav.join('')}</ul></nav>
<main>${byTag.join('\n')}<h2 id="schemas">Response bodies</h2>${schemas.join('\n')}</main></body></html>
`;
}
