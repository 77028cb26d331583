/*
 * An image's metadata and how a field of it is read: a leaf that the storage modules, the filter language and the
 * search pipeline share without importing the image store.
 */

/** Metadata as the schema types it: numbers for int and float fields, strings for string and text fields. */
export type ImageMetadata = Record<string, string | number>;

/**
 * A field's value, if the image has one. Own properties only: a field may be named `toString` or `constructor`, and
 * an image without a value for it must not read Object.prototype's.
 */
export const fieldValue = (metadata: ImageMetadata, field: string): string | number | undefined =>
  Object.hasOwn(metadata, field) ? metadata[field] : undefined;
