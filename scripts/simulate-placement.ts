import path from 'node:path';
import { parseArgs } from 'node:util';
import { unstable_readConfig } from 'wrangler';
import { seededRandom } from '../inference/src/random.ts';
import { D1_DATABASE_BYTES, placeDatabase, type DatabaseFill } from '../src/placement/databases.ts';
import { EXPECTED_OBJECTS_PER_IMAGE, placeShards, vectorsPerImage, VECTORIZE_INDEX_CAPACITY, type GroupKind, type IndexFill } from '../src/placement/shards.ts';
import { ROOT, useLocalWrangler } from './lib/wrangler-env.ts';

/**
 * `npm run simulate:placement` (issue 45, docs/scale.md): places shops of a long-tailed size on one deployment's D1
 * databases and one model's Vectorize indexes by the Worker's own rules (src/placement/), and prints each database's
 * and index's fill, where the largest shop's shards went, and what moving a shop to another database costs.
 *
 *   npm run simulate:placement -- [--seed 45] [--shops 1000] [--bytes-per-image 600] [--objects-per-image 2] [--fill 0.8]
 *
 * Each shop's expected size is known at placement (the image limit an operator sets on a large shop) and the shop
 * then fills it. It starts from one database and one index a group; whenever a placement is refused at `--fill` of a
 * ceiling, the operator adds a database or an index to the group and places again, as docs/scale.md says to.
 */

/**
 * D1 bytes an image's catalog rows take before metadata, in the steady state: `npm run bench -- --only rows` measured
 * 416 to 436 (docs/performance.md, "Bytes of D1 per image"); the highest is taken.
 */
const BYTES_PER_IMAGE = 436;
/**
 * D1 rows written per image copied: the images row and its three indexes (migrations 0001, 0012, 0013); D1 counts
 * each index entry written as a row.
 */
const ROWS_WRITTEN_PER_IMAGE = 4;
/**
 * A move (src/ingest/move.ts) holds a shop's writes while it copies: a step copies at most 8 batches of 200 rows, and
 * steps came about a second apart (the queue's batch timeout was 1 s), so about 1,600 rows a second (an estimate);
 * on top of that, a fixed cost, measured by `npm run bench -- --only rows` on the local stack: 2.2 s held for a
 * 404-image shop. Both are kept as upper bounds: with the ingest queue's batches delivered at once (max_batch_timeout
 * 0) steps follow each other, and the same shop was held 0.1-0.3 s.
 */
const COPY_ROWS_PER_SECOND = 1_600;
const MOVE_FIXED_SECONDS = 2;
/** Shop sizes: Pareto with this scale and shape (most shops small, a long tail), the rest clipped below the largest. */
const PARETO = { scale: 200, shape: 0.65, clip: 5_000_000 };
const LARGEST_SHOP = 10_000_000;

useLocalWrangler();
const { values: args } = parseArgs({
  options: {
    seed: { type: 'string', default: '45' },
    shops: { type: 'string', default: '1000' },
    'bytes-per-image': { type: 'string', default: String(BYTES_PER_IMAGE) },
    // Detected objects an image has on average: each an object vector and a palette vector.
    'objects-per-image': { type: 'string', default: String(EXPECTED_OBJECTS_PER_IMAGE) },
    // The share of a ceiling an operator fills before adding a database or an index: the rest is room to grow.
    fill: { type: 'string', default: '0.8' },
  },
});
const seed = Number(args.seed);
const shopCount = Number(args.shops);
const bytesPerImage = Number(args['bytes-per-image']);
const objectsPerImage = Number(args['objects-per-image']);
const fill = Number(args.fill);
// The deployed shard count, the same setting the Worker reads.
const shards = Number(unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml') }).vars.VECTOR_INDEX_SHARDS);

const random = seededRandom(seed);
const pareto = () => Math.min(PARETO.clip, Math.floor(PARETO.scale / (1 - random()) ** (1 / PARETO.shape)));
const sizes = [LARGEST_SHOP, ...Array.from({ length: shopCount - 1 }, pareto)];
// Shops arrive in random order, the largest among them.
for (let i = sizes.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [sizes[i], sizes[j]] = [sizes[j]!, sizes[i]!];
}

/** Vectors an image adds to each group: its own vector, its objects', and a palette of each (docs/scale.md). */
const groups = (['images', 'objects', 'colors'] as GroupKind[]).map((name) => ({ name, perImage: vectorsPerImage(name, objectsPerImage), indexes: [] as (IndexFill & { shops: number })[] }));
const databases: (DatabaseFill & { images: number })[] = [];
/** What the operator added before each shop whose placement was refused. */
const added = new Map<number, { placed: number; names: string[] }>();
const indexCapacity = { vectors: VECTORIZE_INDEX_CAPACITY.vectors * fill, namespaces: VECTORIZE_INDEX_CAPACITY.namespaces };
const databaseCapacity = D1_DATABASE_BYTES * fill;
let placedImages = 0;
const unplaced: string[] = [];
const largest: Record<string, string[]> = {};
let largestDatabase: string | null = null;

const record = (shop: number, name: string) => {
  const before = added.get(shop) ?? { placed: placedImages, names: [] };
  before.names.push(name);
  added.set(shop, before);
};
const addDatabase = (shop: number) => {
  databases.push({ name: databases.length === 0 ? 'DB' : `DB_${databases.length + 1}`, bytes: 0, applications: 0, images: 0 });
  if (shop > 0) record(shop, databases.at(-1)!.name);
};
const addIndex = (group: (typeof groups)[number], shop: number) => {
  group.indexes.push({ name: group.indexes.length === 0 ? group.name : `${group.name}-${group.indexes.length + 1}`, vectors: 0, reserved: 0, namespaces: 0, shops: 0 });
  if (shop > 0) record(shop, group.indexes.at(-1)!.name);
};
const millions = (count: number) => `${(count / 1e6).toFixed(2)}M`;
addDatabase(0);
for (const group of groups) addIndex(group, 0);

sizes.forEach((images, i) => {
  const shop = i + 1;
  const bytes = images * bytesPerImage;
  if (bytes > databaseCapacity) {
    unplaced.push(`shop ${shop} (${images} images, ${gb(bytes)}): over one database's ${gb(databaseCapacity)}`);
    return;
  }
  let database = placeDatabase(databases, bytes, databaseCapacity);
  if (database === null) {
    addDatabase(shop);
    database = placeDatabase(databases, bytes, databaseCapacity)!;
  }
  const into = databases.find(({ name }) => name === database)!;
  into.bytes += bytes;
  into.images += images;
  into.applications += 1;
  for (const group of groups) {
    const vectors = images * group.perImage;
    let placed = placeShards(group.indexes, shards, vectors, indexCapacity);
    while (placed === null) {
      addIndex(group, shop);
      placed = placeShards(group.indexes, shards, vectors, indexCapacity);
    }
    // The shop's vectors, spread evenly over its shards (a shard is a hash of the id).
    placed.forEach((name, shard) => {
      const index = group.indexes.find((candidate) => candidate.name === name)!;
      const held = Math.floor(vectors / shards) + (shard < vectors % shards ? 1 : 0);
      index.vectors += held;
      index.reserved += held;
      index.namespaces += 1;
      if (!placed.slice(0, shard).includes(name)) index.shops += 1;
    });
    if (images === LARGEST_SHOP) largest[group.name] = placed;
  }
  if (images === LARGEST_SHOP) largestDatabase = database;
  placedImages += images;
});

const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;
const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`;
const sorted = [...sizes].sort((a, b) => a - b);
const at = (quantile: number) => sorted[Math.floor(quantile * (sorted.length - 1))]!;
const count = (predicate: (size: number) => boolean) => sizes.filter(predicate).length;
const lines: string[] = [];
lines.push(
  `${shopCount} shops (seed ${seed}), ${millions(placedImages)} images: median ${at(0.5)}, p90 ${at(0.9)}; ${count((size) => size < 10_000)} under 10,000, ` +
    `${count((size) => size >= 1_000_000)} of a million or more, the largest ${LARGEST_SHOP.toLocaleString('en')}`,
);
lines.push(
  `Model: ${bytesPerImage} B of D1 an image, ${objectsPerImage} objects an image (vectors an image: images 1, objects ${objectsPerImage}, colors ${1 + objectsPerImage}); ` +
    `${shards} shards a shop a group; added at ${fill * 100} % of a ceiling`,
);
lines.push(`Added as placements were refused: ${added.size === 0 ? 'nothing' : ''}`);
for (const [shop, { placed, names }] of added) lines.push(`  before shop ${shop} (${sizes[shop - 1]!.toLocaleString('en')} images; ${millions(placed)} placed): ${names.join(', ')}`);
for (const line of unplaced) lines.push(`  not placed: ${line}`);
lines.push(`Databases (of ${gb(D1_DATABASE_BYTES)}): name, bytes, fill, applications, images`);
for (const db of databases) lines.push(`  ${db.name.padEnd(10)} ${gb(db.bytes).padStart(9)} ${pct(db.bytes, D1_DATABASE_BYTES).padStart(7)} ${String(db.applications).padStart(5)} ${millions(db.images).padStart(7)}`);
lines.push(`Indexes (of ${millions(VECTORIZE_INDEX_CAPACITY.vectors)} vectors, ${VECTORIZE_INDEX_CAPACITY.namespaces} namespaces): name, vectors, fill, namespaces, shops`);
for (const group of groups) {
  for (const index of group.indexes) {
    lines.push(
      `  ${index.name.padEnd(10)} ${millions(index.vectors).padStart(7)} ${pct(index.vectors, VECTORIZE_INDEX_CAPACITY.vectors).padStart(7)} ${String(index.namespaces).padStart(6)} ${String(index.shops).padStart(5)}`,
    );
  }
}
lines.push(`The largest shop: database ${largestDatabase}; its ${shards} shards a group:`);
for (const [group, placed] of Object.entries(largest)) {
  const perIndex = [...new Set(placed)].map((name) => `${name} x${placed.filter((other) => other === name).length}`);
  lines.push(`  ${group.padEnd(8)} ${perIndex.join(', ')}`);
}
lines.push(
  `Moving a shop to another database (writes held ${MOVE_FIXED_SECONDS} s + a row per ${COPY_ROWS_PER_SECOND}th of a second, estimated; ${ROWS_WRITTEN_PER_IMAGE} D1 rows written an image):`,
);
for (const [label, images] of [
  ['small (p10)', at(0.1)],
  ['median', at(0.5)],
  ['largest', LARGEST_SHOP],
] as const) {
  const seconds = MOVE_FIXED_SECONDS + images / COPY_ROWS_PER_SECOND;
  const time = seconds < 60 ? `${seconds.toFixed(1)} s` : seconds < 3600 ? `${(seconds / 60).toFixed(1)} min` : `${(seconds / 3600).toFixed(1)} h`;
  lines.push(
    `  ${label.padEnd(12)} ${images.toLocaleString('en').padStart(10)} rows, ${(images * bytesPerImage).toLocaleString('en').padStart(13)} bytes, ${(images * ROWS_WRITTEN_PER_IMAGE).toLocaleString('en').padStart(11)} rows written, ${time}`,
  );
}
console.log(lines.join('\n'));
