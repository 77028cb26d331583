import { z } from 'zod';
import { ApiError, invalidParameter } from '../http/envelope';
import { indexedName } from '../http/indexed-params';
import { DATA_ERRORS, lengthExceeded } from '../http/messages';
import { integer } from '../http/param-schema';
import type { ParamBudget, RequestParams } from '../http/params';
import { MAX_IM_NAME_LENGTH } from '../storage/image-name';

/** trans_ids are integers below 2^53 (docs/decisions.md). */
export const TRANSACTION = {
  trans_id: z.int().min(0).meta({ description: 'The `trans_id` an `/insert` answered.' }),
};

/** The default and ceiling of `error_limit` are ours: the contract leaves them open (docs/api.md, GET /insert/status). */
export const INSERT_STATUS = {
  error_page: integer({ min: 1, max: Number.MAX_SAFE_INTEGER, default: 1 }, 'Page of `error_list` to return, from 1.'),
  error_limit: integer({ min: 1, max: 100, default: 10 }, 'Error entries per page.'),
};

/** Images per `/insert` (names per `/remove`), keys per image and lengths in characters (docs/api.md, Limits). */
export const INSERT_LIMITS = {
  maxImages: 100,
  maxKeysPerImage: 32,
  maxNameLength: MAX_IM_NAME_LENGTH,
  maxValueLength: 5000,
} as const;

/** One image to remove, sent as `im_name[i]`. */
export const REMOVED_IMAGE = z.object({ im_name: z.string().meta({ description: 'An image to remove.' }) });

/** The parameters a data call may have: its images' keys, and as many of its own (docs/decisions.md, "Bounded parsing"). */
const MAX_DATA_PARAMS = (INSERT_LIMITS.maxImages + 1) * INSERT_LIMITS.maxKeysPerImage;

/** 5000 characters of four UTF-8 bytes, percent-encoded, take 60,000 bytes; the parameter's name fits in the rest. */
const MAX_DATA_TEXT_BYTES = 64 * 1024;

/**
 * How `/insert` and `/remove` count their parameters as the body streams: past 100 images (`tooManyImages`), past
 * MAX_DATA_PARAMS (105) or with a value longer than any within the limits (106), the call is refused at once; an index
 * that is no integer from 0 to MAX_INDEX is a parameter error. Within them, each image is checked on its own.
 */
export const dataParamBudget =
  (tooManyImages: () => ApiError) =>
  (): ParamBudget => {
    let count = 0;
    const indexes = new Set<number>();
    return {
      admit: (name) => {
        if (++count > MAX_DATA_PARAMS) throw ApiError.data(400, DATA_ERRORS.tooManyParameters);
        const index = indexedName(name)?.index;
        if (index === undefined || indexes.has(index)) return;
        if (indexes.add(index).size > INSERT_LIMITS.maxImages) throw tooManyImages();
      },
      maxTextBytes: MAX_DATA_TEXT_BYTES,
      textTooLong: (name) => ApiError.data(400, lengthExceeded(name)),
    };
  };

/** One image's `{key}[i]` parameters: the text of each key, and the files of its file keys. */
export type IndexedImage = { fields: Map<string, string>; files: Map<string, File> };

/**
 * The `{key}[i]` parameters of /insert and /remove (docs/api.md, POST /insert and POST /remove), grouped by index, in
 * index order. `[0]` and `[00]` are one index, so a key given under both is given twice, and refused as a repeated
 * parameter is. A key of `fileKeys` must be a file, any other text.
 */
export function indexedParams(params: RequestParams, fileKeys: ReadonlySet<string> = new Set()): Map<number, IndexedImage> {
  const images = new Map<number, IndexedImage>();
  for (const name of params.names()) {
    const indexed = indexedName(name);
    if (!indexed) continue;
    const { key, index } = indexed;
    const image = images.get(index) ?? { fields: new Map<string, string>(), files: new Map<string, File>() };
    if (image.fields.has(key) || image.files.has(key)) throw invalidParameter(`${key}[${index}] must be given only once.`);
    if (fileKeys.has(key)) image.files.set(key, params.file(name) ?? notAFile(name));
    else image.fields.set(key, params.string(name) ?? '');
    images.set(index, image);
  }
  return new Map([...images].sort(([a], [b]) => a - b));
}

const notAFile = (name: string): never => {
  throw invalidParameter(`${name} must be a file, sent in a multipart/form-data body.`);
};
