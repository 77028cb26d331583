/**
 * `npm run check:imports` (part of npm test): the boundaries of docs/architecture in README's Layout. Type-only imports
 * count, since a circle of types is still a circle to read.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module never imports itself back through others: move the shared definition to a leaf.',
      from: { path: '^(src|inference/src|contract|devtools)/' },
      to: { circular: true },
    },
    {
      name: 'worker-not-inference',
      severity: 'error',
      comment: 'The Worker and the inference service share only contract/ (@edge-image-search/contract).',
      from: { path: '^src/' },
      to: { path: '^inference/' },
    },
    {
      name: 'inference-not-worker',
      severity: 'error',
      comment: 'The inference service never reads the Worker, nor the root tests and scripts: tooling is in devtools/.',
      from: { path: '^inference/' },
      to: { path: '^(src|scripts|test)/' },
    },
    {
      name: 'contract-is-a-leaf',
      severity: 'error',
      comment: 'contract/ is what both programs import; it imports neither.',
      from: { path: '^contract/' },
      to: { path: '^(src|inference|devtools|scripts|test)/' },
    },
    {
      name: 'programs-not-devtools',
      severity: 'error',
      comment: 'Development tooling never ships: the programs do not import it.',
      from: { path: '^(src|inference/src)/' },
      to: { path: '^(devtools|scripts|test)/' },
    },
    {
      name: 'devtools-not-programs',
      severity: 'error',
      comment: 'devtools/ serves both programs\' tests and scripts, so it reads neither program.',
      from: { path: '^devtools/' },
      to: { path: '^(src|inference|scripts|test)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.wrangler|\\.local|dist)/' },
    tsPreCompilationDeps: true,
    combinedDependencies: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.json', '.d.ts'],
    },
  },
};
