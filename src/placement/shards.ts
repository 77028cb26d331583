// With its extension: scripts (the simulation) run this file under Node's type stripping.
import { VECTORIZE_LIMITS } from '../vectorize-limits.ts';

/**
 * Where an application's shards go among the indexes of one group (a model's image indexes, its object indexes, the
 * colour indexes): docs/decisions.md, "Placement". Pure, so that the Worker and the simulation of docs/scale.md
 * place by the same rule.
 */

/** What a group's indexes hold: whole-image vectors, object vectors, or palettes of both (docs/scale.md). */
export type GroupKind = 'images' | 'objects' | 'colors';

/** Objects an image is expected to have, for reservations made before its vectors arrive (docs/scale.md). */
export const EXPECTED_OBJECTS_PER_IMAGE = 2;

/** Vectors one image adds to a group of `kind`: its own, each object's, or a palette of each. */
export const vectorsPerImage = (kind: GroupKind, objectsPerImage = EXPECTED_OBJECTS_PER_IMAGE): number =>
  kind === 'images' ? 1 : kind === 'objects' ? objectsPerImage : 1 + objectsPerImage;

/** What an index holds, as counted: its vectors, and the vectors and namespaces of the shards placed on it. */
export type IndexFill = {
  name: string;
  /** Vectors the index holds now (Vectorize's describe()). */
  vectors: number;
  /** Vectors expected of the shards placed on it, counted until they arrive: an application grows after placement. */
  reserved: number;
  /** Namespaces in use: one a shard placed on it. */
  namespaces: number;
};

/** One index's ceilings: Vectorize's 10 million vectors and 50,000 namespaces (docs/scale.md). */
export type IndexCapacity = { vectors: number; namespaces: number };

export const VECTORIZE_INDEX_CAPACITY: IndexCapacity = { vectors: VECTORIZE_LIMITS.maxVectorsPerIndex, namespaces: VECTORIZE_LIMITS.maxNamespacesPerIndex };

/** How full an index counts as: what it holds or what its shards are expected to hold, whichever is more. */
const used = (index: IndexFill): number => Math.max(index.vectors, index.reserved);

/**
 * The index of each of `shards` shards of an application expected to hold `expectedVectors` vectors in this group:
 * each shard in turn goes to the index with the most free vectors, counting the shards already placed, so that an
 * application spreads over indexes with room alike and new applications fill the emptiest. An index with no free
 * namespace, or whose vectors would pass its capacity, takes none; `null` when some shard fits nowhere.
 */
export function placeShards(indexes: readonly IndexFill[], shards: number, expectedVectors: number, capacity: IndexCapacity): string[] | null {
  const perShard = Math.max(1, Math.ceil(expectedVectors / shards));
  const fills = indexes.map((index) => ({ ...index }));
  const placed: string[] = [];
  for (let shard = 0; shard < shards; shard++) {
    let best: IndexFill | undefined;
    for (const index of fills) {
      const fits = index.namespaces < capacity.namespaces && used(index) + perShard <= capacity.vectors;
      if (fits && (!best || used(index) < used(best))) best = index;
    }
    if (!best) return null;
    best.reserved = used(best) + perShard;
    best.namespaces += 1;
    placed.push(best.name);
  }
  return placed;
}
