/**
 * `npm run setup:vectorize -- --env production [--dry-run]`: creates a deploy environment's Vectorize indexes and
 * their metadata indexes, before any vector is written (Vectorize filters only on properties indexed beforehand).
 * The index names come from the environment's `[[vectorize]]` bindings in wrangler.toml, the filterable fields from
 * its `VECTOR_METADATA_INDEXES`; every object index also gets the product type. `--dry-run` prints the wrangler
 * commands without running them (`npm run check:deploy` does that for each environment).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { unstable_readConfig } from 'wrangler';
import { PALETTE_VECTOR_DIM } from '../src/colors/palette-grid.ts';
import { parseEmbedModels } from '../src/storage/embed-models.ts';
import { OBJECT_TYPE_KEY, parseMetadataIndexes, vectorMetadataKey } from '../src/storage/vector-metadata.ts';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

const { values } = parseArgs({ options: { env: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } } });
if (!values.env) {
  console.error('usage: npm run setup:vectorize -- --env <production|cn> [--dry-run]');
  process.exit(2);
}
useLocalWrangler();
const config = unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml'), env: values.env });
const setting = config.vars.VECTOR_METADATA_INDEXES;
const indexes = parseMetadataIndexes(typeof setting === 'string' ? setting : '');
if (indexes.all) throw new Error(`--env ${values.env}: VECTOR_METADATA_INDEXES "*" suits the local index only; list the fields`);

/** Each bound index: its dimensions, and whether it holds object vectors (filtered by type): each embedding model's two, and the colours'. */
const INDEXES: Record<string, { dimensions: number; objects: boolean }> = {
  VECTORIZE_COLORS: { dimensions: PALETTE_VECTOR_DIM, objects: false },
};
for (const { dimensions, images, objects } of parseEmbedModels(String(config.vars.EMBED_MODELS)).values()) {
  INDEXES[images] = { dimensions, objects: false };
  INDEXES[objects] = { dimensions, objects: true };
}

const commands: string[][] = [];
for (const binding of config.vectorize) {
  const index = INDEXES[binding.binding];
  if (!index) throw new Error(`--env ${values.env}: unknown Vectorize binding ${binding.binding}`);
  const name = binding.index_name;
  commands.push(['vectorize', 'create', name, '--dimensions', String(index.dimensions), '--metric', 'cosine']);
  const properties: [string, string][] = [...indexes.fields].map(([field, kind]) => [vectorMetadataKey(field)!, kind]);
  if (index.objects) properties.unshift([OBJECT_TYPE_KEY, 'string']);
  for (const [property, kind] of properties) {
    commands.push(['vectorize', 'create-metadata-index', name, '--property-name', property, '--type', kind]);
  }
}

const wrangler = path.join(ROOT, 'node_modules/.bin/wrangler');
for (const command of commands) {
  console.log(`wrangler ${command.join(' ')}`);
  if (values['dry-run']) continue;
  const run = spawnSync(wrangler, command, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
