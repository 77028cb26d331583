import { z } from 'zod';
import { dataErrorEntry, type DataErrorEntry } from '../http/envelope';
import { DATA_ERRORS, lengthExceeded, wrongDataType, type DataError } from '../http/messages';
import { file } from '../http/param-schema';
import { MAX_FILE_BYTES, type RequestParams } from '../http/params';
import type { SchemaField } from '../storage/apps';
import { oversizedVectorField } from '../storage/vectors';
import type { ImageMetadata } from '../storage/metadata';
import { isMetadataUpdate, type InsertItem } from '../storage/transactions';
import { characterLength } from '@edge-image-search/contract/wire';
import { indexedParams, INSERT_LIMITS, type IndexedImage } from './data-params';
import { DECIMAL_TEXT, INTEGER_TEXT } from '../number-text';

const IM_NAME = /^[a-zA-Z0-9\-_.:]+$/;
/**
 * One image of an `/insert`, sent as `{key}[i]` form parameters (docs/api.md, POST /insert). parseInsert checks an image against the
 * same limits, in the original service's order and with its data error codes.
 */
export const INSERT_IMAGE = z
  .object({
    im_name: z
      .string()
      .min(1)
      .max(INSERT_LIMITS.maxNameLength)
      .regex(IM_NAME)
      .meta({ description: 'Unique in the collection: a-z, A-Z, 0-9, `-`, `_`, `.`, `:`. A known name is updated.' }),
    im_url: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          'Public URL the image is downloaded from. Without it or `image`, an image already in the collection has only ' +
          'its given metadata fields changed (no download, no new embedding); an unknown name is refused with 108.',
      }),
    image: file(
      `The image as a file of at most ${MAX_FILE_BYTES / (1024 * 1024)} MB, instead of \`im_url\` (not both: 110); checked and stored as a ` +
        'downloaded one is.',
    ),
  })
  .catchall(
    z
      .string()
      .max(INSERT_LIMITS.maxValueLength)
      .meta({ description: 'A metadata field of the schema; others are not stored, and the answer names them in `ignored_fields`.' }),
  );

/** The fields of one accepted image that the schema does not hold: not stored, and named in the answer (docs/api.md, POST /insert). */
export type IgnoredFields = { index: number; im_name: string; fields: string[] };

export type InsertImages = { accepted: InsertItem[]; rejected: DataErrorEntry[]; ignored: IgnoredFields[] };

/** `uploads`: the files of accepted images sent as `image[i]`, by index, to be staged (staged-uploads.ts). */
export type ParsedInsert = { uploads: Map<number, File> } & InsertImages;

/** The file keys of an image: `image[i]` is read as a file whatever its part's headers say. */
const FILE_KEYS = new Set(['image']);

function validateImage({ fields, files }: IndexedImage, schema: Map<string, SchemaField>): DataError | null {
  const imName = fields.get('im_name');
  const upload = files.get('image');
  if (fields.size + files.size > INSERT_LIMITS.maxKeysPerImage) return DATA_ERRORS.tooManyParameters;
  if (imName === undefined || imName === '') return DATA_ERRORS.invalidImName;
  if (characterLength(imName) > INSERT_LIMITS.maxNameLength) return lengthExceeded('im_name');
  if (!IM_NAME.test(imName)) return DATA_ERRORS.invalidImName;
  if (upload && fields.get('im_url')) return DATA_ERRORS.imageAndImUrl;
  // The parser keeps a file to one byte past the limit (http/params.ts): enough to know it passed it.
  if (upload && upload.size > MAX_FILE_BYTES) return lengthExceeded('image');
  for (const [name, value] of fields) {
    if (characterLength(value) > INSERT_LIMITS.maxValueLength) return lengthExceeded(name);
    const type = schema.get(name)?.type;
    if (type === 'int' && !(INTEGER_TEXT.test(value.trim()) && Number.isSafeInteger(Number(value)))) return wrongDataType(name, type);
    if (type === 'float' && !(DECIMAL_TEXT.test(value.trim()) && Number.isFinite(Number(value)))) return wrongDataType(name, type);
  }
  return null;
}

/** The metadata the schema knows, typed by it, and the names of the fields outside it, which are ignored. */
function typedMetadata(fields: Map<string, string>, schema: Map<string, SchemaField>): { metadata: ImageMetadata; ignored: string[] } {
  const typed: [string, string | number][] = [];
  const ignored: string[] = [];
  for (const [name, value] of fields) {
    if (name === 'im_name' || name === 'im_url') continue;
    const type = schema.get(name)?.type;
    if (type === undefined) ignored.push(name);
    else if (type === 'int' || type === 'float') typed.push([name, Number(value)]);
    else typed.push([name, value]);
  }
  // Made as own properties: assigning a field named `__proto__` would set the object's prototype instead.
  return { metadata: Object.fromEntries(typed), ignored };
}

/**
 * Reads and checks an `/insert` call: good images are accepted, each bad one gets its own error entry. A
 * value within the API's 5000 characters whose bytes the vector index cannot hold (10 KiB of filterable metadata a
 * vector) is refused here with 106, rather than failing in the consumer.
 */
export function parseInsert(params: RequestParams, schema: SchemaField[]): ParsedInsert {
  const images = indexedParams(params, FILE_KEYS);
  const fieldsByName = new Map(schema.map((field) => [field.name, field]));
  const accepted: InsertItem[] = [];
  const rejected: DataErrorEntry[] = [];
  const ignoredFields: IgnoredFields[] = [];
  const uploads = new Map<number, File>();
  for (const [index, image] of images) {
    const { fields } = image;
    const upload = image.files.get('image');
    const error = validateImage(image, fieldsByName);
    if (error) {
      rejected.push(dataErrorEntry(error, { index, im_name: fields.get('im_name') }));
      continue;
    }
    const { metadata, ignored } = typedMetadata(fields, fieldsByName);
    const oversized = oversizedVectorField(metadata, schema);
    if (oversized !== undefined) {
      rejected.push(dataErrorEntry(lengthExceeded(oversized), { index, im_name: fields.get('im_name') }));
      continue;
    }
    const imName = fields.get('im_name')!;
    accepted.push({ index, imName, imUrl: fields.get('im_url') || null, metadata });
    if (upload) uploads.set(index, upload);
    if (ignored.length > 0) ignoredFields.push({ index, im_name: imName, fields: ignored });
  }
  return { accepted, rejected, ignored: ignoredFields, uploads };
}

/** Error entries in index order, as the answer lists them. */
export const byIndex = (entries: DataErrorEntry[]): DataErrorEntry[] => entries.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));

/** The images refused by `entries` taken out of the accepted ones, and their ignored fields with them. */
export function refuse(images: InsertImages, entries: DataErrorEntry[]): InsertImages {
  if (entries.length === 0) return images;
  const refused = new Set(entries.map((entry) => entry.index));
  return {
    accepted: images.accepted.filter((item) => !refused.has(item.index)),
    rejected: byIndex([...images.rejected, ...entries]),
    ignored: images.ignored.filter((entry) => !refused.has(entry.index)),
  };
}

/**
 * Settles the metadata-only updates of a parsed insert: those of images in the collection (`known`) stay accepted,
 * the others are refused with 108, as an image without `im_url` cannot be new, and their ignored fields go with them.
 * Errors stay in index order.
 */
export function resolveMetadataUpdates(parsed: InsertImages, known: ReadonlySet<string>): InsertImages {
  const unknown = parsed.accepted.filter((item) => isMetadataUpdate(item) && !known.has(item.imName));
  return refuse(parsed, unknown.map((item) => dataErrorEntry(DATA_ERRORS.missingImUrl, { index: item.index, im_name: item.imName })));
}
