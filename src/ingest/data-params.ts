import { z } from 'zod';
import { invalidParameter } from '../http/envelope';
import { integer } from '../http/param-schema';
import type { RequestParams } from '../http/params';

/** trans_ids are integers below 2^53 (docs/decisions.md). */
export const TRANSACTION = {
  trans_id: z.int().min(0).meta({ description: 'The `trans_id` an `/insert` answered.' }),
};

/** The default and ceiling of `error_limit` are ours: the contract leaves them open (docs/api.md, GET /insert/status). */
export const INSERT_STATUS = {
  error_page: integer({ min: 1, max: Number.MAX_SAFE_INTEGER, default: 1 }, 'Page of `error_list` to return, from 1.'),
  error_limit: integer({ min: 1, max: 100, default: 10 }, 'Error entries per page.'),
};

/** Names per `/remove` call, as for `/insert`. */
export const MAX_REMOVE_NAMES = 100;

/** One image to remove, sent as `im_name[i]`. */
export const REMOVED_IMAGE = z.object({ im_name: z.string().meta({ description: 'An image to remove.' }) });

const INDEXED_KEY = /^(.+)\[(\d+)\]$/;

/**
 * The `{key}[i]=value` parameters of /insert and /remove (docs/api.md, POST /insert and POST /remove), grouped by index, in index order. `[0]` and
 * `[00]` are one index, so a key given under both is given twice, and refused as a repeated parameter is.
 */
export function indexedParams(params: RequestParams): Map<number, Map<string, string>> {
  const images = new Map<number, Map<string, string>>();
  for (const name of params.names()) {
    const match = INDEXED_KEY.exec(name);
    if (!match) continue;
    const key = match[1]!;
    const index = Number(match[2]);
    const fields = images.get(index) ?? new Map<string, string>();
    if (fields.has(key)) throw invalidParameter(`${key}[${index}] must be given only once.`);
    fields.set(key, params.string(name) ?? '');
    images.set(index, fields);
  }
  return new Map([...images].sort(([a], [b]) => a - b));
}

/** The files sent as `{key}[i]` (a text value under that name is no file), by index. */
export function indexedFiles(params: RequestParams, key: string): Map<number, File> {
  const files = new Map<number, File>();
  for (const name of params.names()) {
    const match = INDEXED_KEY.exec(name);
    const file = match?.[1] === key ? params.file(name) : undefined;
    if (file) files.set(Number(match![2]), file);
  }
  return files;
}
