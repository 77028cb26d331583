/** The API's messages, to the letter (docs/api.md, Messages). Every response that reports one of these cites it from here. */

export const GENERAL = {
  invalidKeys: 'Invalid access key or secret key.',
  unauthorized: 'Unauthorized.',
  collectionFull: 'Exceeds image collection size limit.',
  busy: 'System busy, please try again later.',
  systemError: 'A system error is reported and we are fixing it right now.',
} as const;

/** Data API errors (7.2): numeric code and message. */
export const DATA_ERRORS = {
  transactionNotFound: { code: 101, message: 'Transaction not found with trans_id.' },
  imageNotFound: { code: 102, message: 'Image not found with im_name.' },
  batchTooLarge: { code: 103, message: 'Exceeded maximum insert batch size of 100.' },
  noImageInserted: { code: 104, message: 'No image inserted.' },
  tooManyParameters: { code: 105, message: 'Number of parameters for image exceeds maximum limit of 32.' },
  invalidImName: { code: 107, message: 'Invalid im_name.' },
  missingImUrl: { code: 108, message: 'Missing im_url.' },
  imageAndImUrl: { code: 110, message: 'Only one of image and im_url may be given.' },
  /** Ours, like 110: an insert item a later `/remove` of its name overtook (docs/decisions.md, "Removal and order"). */
  removedBeforeProcessed: { code: 111, message: 'Image removed before it was processed.' },
  downloadFailed: { code: 201, message: 'Could not download the image from im_url.' },
  unsupportedFormat: { code: 202, message: 'Unsupported image format.' },
  unsupportedDimension: { code: 203, message: 'Unsupported image dimension.' },
} as const;

export type DataError = { code: number; message: string };

export const lengthExceeded = (parameter: string): DataError => ({
  code: 106,
  message: `${parameter} exceeds length limit.`,
});

export const wrongDataType = (field: string, type: string): DataError => ({
  code: 109,
  message: `${field} should be of data type ${type}.`,
});

/** Search API errors (7.3). */
export const SEARCH_ERRORS = {
  stillProcessing: 'The query image is still being processed, please try again later.',
  imageNotFound: 'Image not found with im_name.',
  invalidFileFormat: 'Invalid image file format.',
  invalidFormatOrDimension: 'The image format or dimension is invalid.',
  invalidImageOrUrl: 'Invalid image or im_url.',
  downloadFailed: 'Could not download the image, please try again later.',
  downloadTimeout: 'Timeout while downloading image, please try again later.',
  emptyCollection: "App doesn't have any images.",
} as const;
