import { invalidParameter } from './envelope';

/**
 * The `{key}[i]` parameters of `/insert` and `/remove` (docs/api.md, POST /insert): `i` is an integer from 0 to
 * MAX_INDEX, the most an index the clients read back as an integer holds (the Java SDK's `int`); `[0]` and `[00]`
 * are one index.
 */
export const MAX_INDEX = 2 ** 31 - 1;

const INDEXED_NAME = /^(.+)\[([^\]]*)\]$/;

/** The key and index of a name with brackets (the index undefined when the brackets hold no valid index), else undefined. */
export function splitIndexed(name: string): { key: string; index: number | undefined } | undefined {
  const match = INDEXED_NAME.exec(name);
  if (!match) return undefined;
  const index = /^\d+$/.test(match[2]!) ? Number(match[2]) : Number.NaN;
  return { key: match[1]!, index: index <= MAX_INDEX ? index : undefined };
}

/** The key and index of an indexed parameter's name, undefined for a name without brackets; a bad index is the API's parameter error. */
export function indexedName(name: string): { key: string; index: number } | undefined {
  const split = splitIndexed(name);
  if (split?.index === undefined && split !== undefined) {
    const shown = name.length > 64 ? `${name.slice(0, 64)}...` : name;
    throw invalidParameter(`${shown}: an index must be an integer from 0 to ${MAX_INDEX}.`);
  }
  return split as { key: string; index: number } | undefined;
}
