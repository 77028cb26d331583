/**
 * `npm run setup:vectorize -- --env production [--from-inference <url>] [--dry-run]`: creates a deploy environment's
 * Vectorize indexes and their metadata indexes, before any vector is written (Vectorize filters only on properties
 * indexed beforehand). The index names come from the environment's `[[vectorize]]` bindings in wrangler.toml, the
 * filterable fields from its `VECTOR_METADATA_INDEXES`; every object index also gets the product type. With
 * `--from-inference`, it creates instead the indexes of the models that inference service loaded (its /health) and
 * the environment does not bind yet, named as served-models.ts derives them, and prints the EMBED_MODELS, EMBED_MODEL
 * and bindings to put in wrangler.toml. `--dry-run` prints the wrangler commands without running them
 * (`npm run check:deploy` does that for each environment).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { unstable_readConfig } from 'wrangler';
import { PALETTE_VECTOR_DIM } from '../src/colors/palette-grid.ts';
import { colorIndexes, groupIndexes, parseEmbedModels } from '../src/storage/embed-models.ts';
import { OBJECT_TYPE_KEY, parseMetadataIndexes, vectorMetadataKey } from '../src/storage/vector-metadata.ts';
import { embedModelsFor, indexNamesOf, servedEmbedders } from './lib/served-models.ts';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

const { values } = parseArgs({
  options: { env: { type: 'string' }, 'from-inference': { type: 'string' }, 'dry-run': { type: 'boolean', default: false } },
});
if (!values.env) {
  console.error('usage: npm run setup:vectorize -- --env <production|cn> [--from-inference <inference service URL>] [--dry-run]');
  process.exit(2);
}
useLocalWrangler();
const config = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env: values.env });
const setting = config.vars.VECTOR_METADATA_INDEXES;
const indexes = parseMetadataIndexes(typeof setting === 'string' ? setting : '');
if (indexes.all) throw new Error(`--env ${values.env}: VECTOR_METADATA_INDEXES "*" suits the local index only; list the fields`);
const configured = parseEmbedModels(String(config.vars.EMBED_MODELS));
// wrangler's types leave the bindings untyped.
const vectorize: { binding: string; index_name: string }[] = config.vectorize;

/** An index to create: its dimensions, and whether it holds object vectors (filtered by type). */
type IndexSetup = { name: string; dimensions: number; objects: boolean };

/** Each bound index: each embedding model's image and object groups (and its tuned ones), and the colours'. */
const INDEXES: Record<string, Omit<IndexSetup, 'name'>> = Object.fromEntries(
  colorIndexes({ COLOR_INDEXES: String(config.vars.COLOR_INDEXES) }).map((name) => [name, { dimensions: PALETTE_VECTOR_DIM, objects: false }]),
);
for (const { dimensions, images, objects, tuned } of configured.values()) {
  for (const names of [{ images, objects }, ...(tuned ? [tuned] : [])]) {
    for (const name of groupIndexes(names.images)) INDEXES[name] = { dimensions, objects: false };
    for (const name of groupIndexes(names.objects)) INDEXES[name] = { dimensions, objects: true };
  }
}
const bound: IndexSetup[] = vectorize.map((binding) => {
  const index = INDEXES[binding.binding];
  if (!index) throw new Error(`--env ${values.env}: unknown Vectorize binding ${binding.binding}`);
  return { name: binding.index_name, ...index };
});

const fromInference = values['from-inference'];
const { toCreate, settings } = fromInference ? await servedModelIndexes(fromInference) : { toCreate: bound, settings: undefined };

const commands: string[][] = [];
for (const index of toCreate) {
  commands.push(['vectorize', 'create', index.name, '--dimensions', String(index.dimensions), '--metric', 'cosine']);
  const properties: [string, string][] = [...indexes.fields].map(([field, kind]) => [vectorMetadataKey(field)!, kind]);
  if (index.objects) properties.unshift([OBJECT_TYPE_KEY, 'string']);
  for (const [property, kind] of properties) {
    commands.push(['vectorize', 'create-metadata-index', index.name, '--property-name', property, '--type', kind]);
  }
}

const wrangler = path.join(ROOT, 'node_modules/.bin/wrangler');
for (const command of commands) {
  console.log(`wrangler ${command.join(' ')}`);
  if (values['dry-run']) continue;
  const run = spawnSync(wrangler, command, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
if (settings) console.log(`\n${settings}`);

/** A model's binding: `images-clip-...` is bound as `VECTORIZE_IMAGES_CLIP_...`, as `images-fused376` is. */
function bindingOf(localName: string): string {
  return `VECTORIZE_${localName.toUpperCase().replaceAll('-', '_')}`;
}

/**
 * The indexes of the models the service at `inferenceUrl` loaded that EMBED_MODELS does not list, named like the
 * environment's colour index (`image-search-colors`: `image-search-images-clip-...`), and the settings that use them.
 */
async function servedModelIndexes(inferenceUrl: string): Promise<{ toCreate: IndexSetup[]; settings: string }> {
  const served = await servedEmbedders(inferenceUrl.replace(/\/+$/, ''));
  const colors = vectorize.find(({ binding }) => binding === 'VECTORIZE_COLORS')?.index_name;
  if (!colors?.endsWith('colors')) throw new Error(`--env ${values.env}: new index names follow the VECTORIZE_COLORS binding's, which should end in "colors"`);
  const prefix = colors.slice(0, -'colors'.length);
  const added = served.filter(({ id }) => !configured.has(id)).map(({ id, dim }) => ({ dim, names: indexNamesOf(id) }));
  const { models, defaultModel } = embedModelsFor(served, configured, (id) => {
    const names = indexNamesOf(id);
    return { images: bindingOf(names.images), objects: bindingOf(names.objects), tuned: { images: bindingOf(names.tuned.images), objects: bindingOf(names.tuned.objects) } };
  });
  const bindings = added
    .flatMap(({ names }) => [names.images, names.objects, names.tuned.images, names.tuned.objects])
    .map((name) => ({ binding: bindingOf(name), index_name: prefix + name }));
  const settings = [
    ...(added.length === 0 ? [`# --env ${values.env} binds every model the service loaded: nothing to create.`] : []),
    `# wrangler.toml, [env.${values.env}.vars] (the service's models first, its default as EMBED_MODEL):`,
    `EMBED_MODELS = '''{\n${Object.entries(models).map(([id, entry]) => `  ${JSON.stringify(id)}: ${JSON.stringify(entry)}`).join(',\n')}\n}'''`,
    `EMBED_MODEL = ${JSON.stringify(defaultModel)}`,
    ...bindings.map(({ binding, index_name }) => `\n[[env.${values.env}.vectorize]]\nbinding = "${binding}"\nindex_name = "${index_name}"`),
  ];
  const toCreate = added.flatMap(({ dim, names }) =>
    [names, names.tuned].flatMap((pair) => [
      { name: prefix + pair.images, dimensions: dim, objects: false },
      { name: prefix + pair.objects, dimensions: dim, objects: true },
    ]),
  );
  return { toCreate, settings: settings.join('\n') };
}
