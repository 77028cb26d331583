import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createConfig, formatProblems, getTotals, lintFromString } from '@redocly/openapi-core';
import { build, type Plugin } from 'esbuild';
import { ROOT } from './lib/wrangler-env.ts';

/**
 * `npm run check:openapi`: the OpenAPI document the Worker serves at /openapi.json, built from its route declarations
 * (src/routes/index.ts), passes Redocly's `recommended` rules with no error; warnings are printed and counted.
 * The Worker's modules import without extensions, so they are bundled first, into the ignored `.local/`.
 */

/**
 * Only the route declarations are read: what the Workers runtime alone provides, which handlers use when they run
 * (the local vector index's Durable Object base class and WebAssembly kernel), is left empty.
 */
const workersRuntime: Plugin = {
  name: 'workers-runtime',
  setup(bundler) {
    bundler.onResolve({ filter: /^cloudflare:|\.wasm$/ }, (args) => ({ path: args.path, namespace: 'workers-runtime' }));
    bundler.onLoad({ filter: /.*/, namespace: 'workers-runtime' }, () => ({ contents: 'export class DurableObject {}; export default undefined;', loader: 'js' }));
  },
};

const bundled = path.join(ROOT, '.local/check-openapi/document.mjs');
await build({
  stdin: {
    contents: [
      "import { ROUTES } from './src/routes/index';",
      "import { openApiDocument } from './src/openapi/document';",
      'export const document = openApiDocument(ROUTES);',
    ].join('\n'),
    resolveDir: ROOT,
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  outfile: bundled,
  plugins: [workersRuntime],
  logLevel: 'error',
});
const { document } = (await import(pathToFileURL(bundled).href)) as { document: object };

// As served, with the server it is asked from.
const source = JSON.stringify({ ...document, servers: [{ url: 'https://search.example' }] }, null, 2);
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source, absoluteRef: path.join(ROOT, 'openapi.json'), config });
const totals = getTotals(problems);
if (problems.length > 0) formatProblems(problems, { format: 'stylish', totals, version: 'check-openapi' });
console.log(`openapi.json: ${totals.errors} errors, ${totals.warnings} warnings (Redocly recommended rules)`);
if (totals.errors > 0) process.exit(1);
