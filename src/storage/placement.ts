import type { Env } from '../env';
import { physicalIndex, shardCount } from '../ports/vector-index';
import { placeShards, vectorsPerImage, VECTORIZE_INDEX_CAPACITY, type GroupKind, type IndexCapacity, type IndexFill } from '../placement/shards';
import { colorIndexes, embedModelIndexesOf, embedModels, groupIndexes } from './embed-models';
import { primaryDatabase } from './d1-meter';

/**
 * Where an application's shards live (docs/decisions.md, "Placement"): for each group of indexes it has vectors in,
 * the index of each shard, by the group's name (its first index). Recorded in `apps.placement` when the application
 * is made, for the groups of its model and the colour group, and for another group (a reindex's model) before its
 * first vector; a group once placed is never changed, so that each isolate keeps what it read.
 */
export type Placement = Record<string, string[]>;

/** A group of indexes, the first naming it, and what its vectors are (for the room an application reserves). */
export type IndexGroup = { kind: GroupKind; indexes: readonly string[] };

/** Placement found every index of a group full: the operator adds one to the setting `setting` names. */
export class PlacementRefused extends Error {}

/** A model's own groups (EMBED_MODELS): its image and object groups, and its tuned ones where it has them. */
function modelGroups(env: Env, model: string): IndexGroup[] {
  const { images, objects, tuned } = embedModelIndexesOf(env, model);
  return [{ images, objects }, ...(tuned ? [tuned] : [])].flatMap((pair) => [
    { kind: 'images' as const, indexes: groupIndexes(pair.images) },
    { kind: 'objects' as const, indexes: groupIndexes(pair.objects) },
  ]);
}

const colorGroup = (env: Env): IndexGroup => ({ kind: 'colors', indexes: colorIndexes(env) });

/** The groups an application on `model` writes: its model's, and the colours'. */
export const groupsOf = (env: Env, model: string): IndexGroup[] => [...modelGroups(env, model), colorGroup(env)];

/** The setting that lists a group's indexes, for a refusal's message. */
function settingOf(env: Env, group: IndexGroup): string {
  const model = [...embedModels(env).keys()].find((each) => modelGroups(env, each).some((own) => own.indexes[0] === group.indexes[0]));
  return model === undefined ? 'COLOR_INDEXES' : `EMBED_MODELS (the model ${model})`;
}

/** Each index's ceilings: Vectorize's, or VECTOR_INDEX_CAPACITY's vectors (a local stack's small test of refusal). */
export const indexCapacity = (env: Env): IndexCapacity =>
  env.VECTOR_INDEX_CAPACITY ? { ...VECTORIZE_INDEX_CAPACITY, vectors: Number(env.VECTOR_INDEX_CAPACITY) } : VECTORIZE_INDEX_CAPACITY;

/** Per index: the namespaces of the shards placed on it, and the images their applications expect (image_limit). */
async function placedShards(db: D1Database): Promise<Map<string, { namespaces: number; expectedImages: number }>> {
  const { results } = await db
    .prepare(
      `SELECT shard.value AS name, COUNT(*) AS namespaces, COALESCE(SUM(apps.image_limit), 0) AS expected_images
       FROM apps, json_each(apps.placement) AS grouped, json_each(grouped.value) AS shard
       WHERE apps.placement IS NOT NULL GROUP BY shard.value`,
    )
    .all<{ name: string; namespaces: number; expected_images: number }>();
  return new Map(results.map((row) => [row.name, { namespaces: row.namespaces, expectedImages: row.expected_images }]));
}

/** What each index of `group` holds, as placement counts it. */
async function fillOf(env: Env, group: IndexGroup, placed: Map<string, { namespaces: number; expectedImages: number }>): Promise<IndexFill[]> {
  const shards = shardCount(env);
  return Promise.all(
    group.indexes.map(async (name) => {
      const onIndex = placed.get(name);
      const reserved = Math.ceil(((onIndex?.expectedImages ?? 0) * vectorsPerImage(group.kind)) / shards);
      return { name, vectors: await physicalIndex(env, name).countVectors(), reserved, namespaces: onIndex?.namespaces ?? 0 };
    }),
  );
}

/**
 * `placement` with each of `groups` it lacks placed, for an application expecting `expectedImages` images (its
 * image_limit; 0 when unset: it then counts by the vectors it writes). Throws PlacementRefused naming the setting.
 */
export async function placeGroups(env: Env, placement: Placement, groups: readonly IndexGroup[], expectedImages: number): Promise<Placement> {
  const missing = groups.filter((group) => !placement[group.indexes[0]!]);
  if (missing.length === 0) return placement;
  const placed = await placedShards(primaryDatabase(env));
  const next = { ...placement };
  for (const group of missing) {
    const shards = placeShards(await fillOf(env, group, placed), shardCount(env), expectedImages * vectorsPerImage(group.kind), indexCapacity(env));
    if (!shards) throw new PlacementRefused(`Every index of the group ${group.indexes.join(', ')} is full: add an index to ${settingOf(env, group)}.`);
    next[group.indexes[0]!] = shards;
  }
  return next;
}

/** An application's placement as read: null for one made before placement. */
const placements = new Map<string, Placement | null>();
/** A few thousand applications' placements: each is a few hundred bytes. */
const PLACEMENT_CACHE_ENTRIES = 6000;

function remember(appId: string, placement: Placement | null): void {
  placements.delete(appId);
  placements.set(appId, placement);
  for (const oldest of placements.keys()) {
    if (placements.size <= PLACEMENT_CACHE_ENTRIES) break;
    placements.delete(oldest);
  }
}

/**
 * An application's placement as read with it (the calling application, storage/apps.ts), kept so that its searches
 * read none. Groups are only ever added, so what is kept already is never replaced by a read that may be older.
 */
export function notePlacement(appId: string, placement: Placement | null): void {
  if (!placements.has(appId)) remember(appId, placement);
}

async function readPlacement(db: D1Database, appId: string): Promise<{ placement: Placement | null; imageLimit: number | null } | null> {
  const row = await db.prepare('SELECT placement, image_limit FROM apps WHERE id = ?').bind(appId).first<{ placement: string | null; image_limit: number | null }>();
  return row && { placement: row.placement === null ? null : (JSON.parse(row.placement) as Placement), imageLimit: row.image_limit };
}

/**
 * Places and records each of `groups` an application lacks (a reindex's model, before its first vector): once for
 * every isolate, the first write to D1 winning. Nothing for an application made before placement.
 */
export async function placeApplication(env: Env, appId: string, groups: readonly IndexGroup[]): Promise<void> {
  const db = primaryDatabase(env);
  const read = await readPlacement(db, appId);
  if (!read?.placement) return;
  const placed = await placeGroups(env, read.placement, groups, read.imageLimit ?? 0);
  const added = groups.map((group) => group.indexes[0]!).filter((name) => !read.placement![name]);
  if (added.length === 0) return;
  await db.batch(
    added.map((name) =>
      db
        .prepare('UPDATE apps SET placement = json_set(placement, ?, json(?)) WHERE id = ? AND json_extract(placement, ?) IS NULL')
        .bind(`$.${JSON.stringify(name)}`, JSON.stringify(placed[name]), appId, `$.${JSON.stringify(name)}`),
    ),
  );
}

/**
 * The index of each shard of an application in `group`; null when they are all in the group's first (a group of one
 * index, an application made before placement, or one since deleted). A group the application has no placement in
 * yet is placed now (placeApplication).
 */
export async function shardPlacement(env: Env, appId: string, group: IndexGroup): Promise<readonly string[] | null> {
  const name = group.indexes[0]!;
  if (group.indexes.length === 1) return null;
  const known = placements.get(appId);
  if (known === null) return null;
  const cached = known?.[name];
  if (cached) return cached;
  for (let attempt = 0; attempt < 2; attempt++) {
    const read = await readPlacement(primaryDatabase(env), appId);
    if (!read?.placement) {
      if (read) remember(appId, null);
      return null;
    }
    const shards = read.placement[name];
    if (shards) {
      remember(appId, read.placement);
      return shards;
    }
    await placeApplication(env, appId, [group]);
  }
  throw new Error(`The application ${appId} could not be placed in ${group.indexes.join(', ')}`);
}

/** The capacity view of the indexes (GET /admin/placement): each with its model, vectors and namespaces. */
export async function indexFills(env: Env): Promise<{ name: string; model: string | null; vectors: number; namespaces: number }[]> {
  const placed = await placedShards(primaryDatabase(env));
  const all = [
    ...[...embedModels(env).keys()].flatMap((model) => modelGroups(env, model).flatMap((group) => group.indexes.map((name) => ({ name, model })))),
    ...colorGroup(env).indexes.map((name) => ({ name, model: null })),
  ];
  return Promise.all(all.map(async ({ name, model }) => ({ name, model, vectors: await physicalIndex(env, name).countVectors(), namespaces: placed.get(name)?.namespaces ?? 0 })));
}
