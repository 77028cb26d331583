import { DownloadError, downloadImage, downloadOptions } from '../download/download';
import type { Env } from '../env';
import { ApiError, invalidParameter } from '../http/envelope';
import { SEARCH_ERRORS } from '../http/messages';
import { file, readParam, text } from '../http/param-schema';
import { MAX_FILE_BYTES, type RequestParams } from '../http/params';
import { hasSupportedDimensions, probeImage, type ImageInfo } from '../images/probe';
import type { AppRecord } from '../storage/apps';
import { putImageBlob, queryBlobKey } from '../storage/blobs';
import { primaryDatabase } from '../storage/d1-meter';
import { catalogDatabase } from '../storage/databases';
import { findQueryImage, insertQueryImage, setQueryImageAnalysis } from '../storage/query-images';
import { keptAnalysisText, parseQueryAnalysis, type QueryAnalysis } from './query-analysis';
import { countDownloadedBytes, refuseCutDownload } from './quota';

/** Exactly one of them. */
export const QUERY_IMAGE = {
  image: file(
    `The query image file, at most ${MAX_FILE_BYTES / (1024 * 1024)} MB (JPEG, PNG, GIF, BMP, WebP, PNM, Sun raster or TIFF, at least 100 ` +
      'pixels one way, at most 40 MP).',
  ),
  im_url: text('A public URL of the query image, downloaded and searched.'),
  im_id: text('The `im_id` of an earlier `/uploadsearch`: its image is searched again without a download.'),
};

/** An uploaded query image is at most MAX_FILE_BYTES; an image URL is held to the same. */
const tooLarge = (): ApiError => new ApiError(413, `The image file exceeds the ${MAX_FILE_BYTES / (1024 * 1024)}MB limit.`);
const notFound = (): ApiError => new ApiError(404, 'Image not found with im_id.');

/**
 * `isNew`: an upload or a download, not kept yet (keepQueryImage); otherwise read back by its `im_id`, with the
 * analysis kept beside it (absent for an image kept before analyses were). `bytes` reads a kept image from storage
 * only when something needs its pixels: a search by `im_id` with a kept analysis and no new box needs none.
 */
export type QueryImage = { imId: string; bytes: () => Promise<Uint8Array>; info: ImageInfo; isNew: boolean; analysis?: QueryAnalysis };

type QueryApp = Pick<AppRecord, 'id' | 'database' | 'embedModel' | 'limits' | 'productTypes'>;

const newImId = (): string => crypto.randomUUID().replaceAll('-', '');

/**
 * Reads at most what the minute's upload bytes leave (`bytesLeft`), and counts what it read: a downloaded image costs
 * the inference service what an uploaded one does.
 */
async function download(env: Env, app: QueryApp, url: string, bytesLeft: number): Promise<Uint8Array> {
  const maxBytes = Math.min(MAX_FILE_BYTES, bytesLeft);
  let bytes: Uint8Array;
  try {
    bytes = await downloadImage(url, downloadOptions(env, maxBytes));
  } catch (error) {
    if (!(error instanceof DownloadError)) throw error;
    if (error.reason === 'timeout') throw new ApiError(400, SEARCH_ERRORS.downloadTimeout);
    if (error.reason === 'too_large') {
      if (maxBytes < MAX_FILE_BYTES) await refuseCutDownload(env.USAGE_COUNTER, app, maxBytes);
      throw tooLarge();
    }
    if (error.reason === 'invalid_url') throw new ApiError(400, SEARCH_ERRORS.invalidImageOrUrl);
    throw new ApiError(400, SEARCH_ERRORS.downloadFailed);
  }
  await countDownloadedBytes(env.USAGE_COUNTER, app, bytes.byteLength);
  return bytes;
}

/** Reads the size from the header only, as at insert: the Worker never decodes pixels. */
function checkImage(bytes: Uint8Array): ImageInfo {
  const info = probeImage(bytes);
  if (!info) throw new ApiError(400, SEARCH_ERRORS.invalidFileFormat);
  if (!hasSupportedDimensions(info)) throw new ApiError(400, SEARCH_ERRORS.invalidFormatOrDimension);
  return info;
}

/**
 * The one image source of an upload search (docs/api.md, POST /uploadsearch): an uploaded file, an image URL, or the `im_id` of an earlier
 * upload. A new image gets a new `im_id`, kept by keepQueryImage; an `im_id` is read back without any download, and
 * its bytes, counted when they came, are not counted again. `bytesLeft`: what a download may read (searchQuota).
 */
export async function resolveQueryImage(env: Env, app: QueryApp, params: RequestParams, bytesLeft: number): Promise<QueryImage> {
  const upload = readParam(params, QUERY_IMAGE, 'image');
  const url = readParam(params, QUERY_IMAGE, 'im_url');
  const imId = readParam(params, QUERY_IMAGE, 'im_id');
  // An image sent as text is no file, but it is a source: with another one it makes two.
  const given = [upload ?? params.string('image'), url, imId].filter((source) => source !== undefined && source !== '');
  if (given.length !== 1) throw invalidParameter('Exactly one of image, im_url and im_id is required.');

  if (imId) {
    // Kept by an earlier search, maybe a moment ago: a replica that has not seen it yet does not say it is unknown.
    const row = (await findQueryImage(catalogDatabase(env, app), app.id, imId)) ?? (await findQueryImage(primaryDatabase(env, app.database), app.id, imId));
    if (!row) throw notFound();
    const info = { format: row.format as ImageInfo['format'], width: row.width, height: row.height };
    let stored: Promise<Uint8Array> | undefined;
    const read = async (): Promise<Uint8Array> => {
      const object = await env.BLOBS.get(row.blob_key);
      if (!object) throw notFound();
      return new Uint8Array(await object.arrayBuffer());
    };
    // A kept analysis that does not read as one, or of another model, is made again (and kept again).
    const analysis = row.analysis === null ? undefined : parseQueryAnalysis(row.analysis, app);
    return { imId, bytes: () => (stored ??= read()), info, isNew: false, ...(analysis ? { analysis } : {}) };
  }

  let bytes: Uint8Array;
  if (url) bytes = await download(env, app, url, bytesLeft);
  else if (upload) {
    if (upload.size > MAX_FILE_BYTES) throw tooLarge();
    bytes = new Uint8Array(await upload.arrayBuffer());
  } else throw new ApiError(400, SEARCH_ERRORS.invalidImageOrUrl);

  const info = checkImage(bytes);
  return { imId: newImId(), bytes: async () => bytes, info, isNew: true };
}

/**
 * Keeps a new query image (R2 and D1) under its `im_id` with its analysis, or the analysis of a kept image that had
 * none. Called once the image has been analysed, so that one the inference service cannot read (or whose box lies
 * outside it) leaves nothing behind.
 */
export async function keepQueryImage(env: Env, app: { id: string; database: string }, query: QueryImage, analysis: QueryAnalysis): Promise<void> {
  const appId = app.id;
  const db = catalogDatabase(env, app);
  if (query.isNew) {
    await putImageBlob(env.BLOBS, queryBlobKey(appId, query.imId), await query.bytes(), query.info.format);
    await insertQueryImage(db, appId, query.imId, query.info, keptAnalysisText(analysis));
  } else if (!query.analysis) await setQueryImageAnalysis(db, appId, query.imId, keptAnalysisText(analysis));
}
