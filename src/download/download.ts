/**
 * Fetching an image from its URL: every URL, redirects included, passes the SSRF guard first; one total timeout and
 * one byte cap cover all hops, and the body is streamed so a huge one is cut off early.
 */
import type { Env } from '../env';
import { BodyTooLarge, readCapped } from '../http/capped-body';
import { checkUrl, LookupFailed, UnsupportedScheme, UrlRefused, type UrlPolicy } from './url-guard';

/** `invalid_url`: not an http(s) URL, so no retry helps; `refused`: a host the guard keeps out (not public). */
export type DownloadFailure = 'timeout' | 'unreachable' | 'too_large' | 'refused' | 'invalid_url';

export class DownloadError extends Error {
  override name = 'DownloadError';
  readonly reason: DownloadFailure;

  constructor(reason: DownloadFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

export type DownloadOptions = UrlPolicy & { timeoutMs: number; maxBytes: number };

/** Redirects followed before a download gives up. */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The download settings of this deployment (wrangler.toml), with the byte cap of the caller. */
export const downloadOptions = (env: Env, maxBytes: number): DownloadOptions => ({
  timeoutMs: Number(env.IMAGE_DOWNLOAD_TIMEOUT_MS),
  maxBytes,
  allowLoopback: env.IMAGE_URL_ALLOW_LOOPBACK === 'true',
  resolver: env.IMAGE_URL_RESOLVER || undefined,
});

export async function downloadImage(url: string, options: DownloadOptions): Promise<Uint8Array> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await fetchGuarded(url, options, signal);
    if (!response.ok || !response.body) throw new DownloadError('unreachable', `HTTP ${response.status} from ${url}`);
    return await readCapped(response, options.maxBytes);
  } catch (error) {
    if (error instanceof DownloadError) throw error;
    if (error instanceof BodyTooLarge) throw new DownloadError('too_large', `${error.message} at ${url}`);
    if (error instanceof UrlRefused) throw new DownloadError('refused', error.message);
    if (error instanceof LookupFailed) throw new DownloadError('unreachable', error.message);
    if (signal.aborted) throw new DownloadError('timeout', `timed out after ${options.timeoutMs} ms: ${url}`);
    throw new DownloadError('unreachable', `${String(error)}: ${url}`);
  }
}

const parseUrl = (url: string, base?: URL): URL => {
  try {
    return new URL(url, base);
  } catch {
    // The given URL is invalid; a redirect's location that is not one makes the given URL unreachable.
    throw new DownloadError(base ? 'unreachable' : 'invalid_url', `not a URL: ${url}`);
  }
};

/** Follows redirects by hand, so that every hop's URL is checked before it is fetched. */
async function fetchGuarded(url: string, options: DownloadOptions, signal: AbortSignal): Promise<Response> {
  let target = parseUrl(url);
  for (let hop = 0; ; hop++) {
    try {
      await checkUrl(target, options, signal);
    } catch (error) {
      // Only the given URL can be an invalid one; a redirect elsewhere makes it unreachable.
      if (error instanceof UnsupportedScheme) throw new DownloadError(hop === 0 ? 'invalid_url' : 'unreachable', `${error.message}: ${url}`);
      throw error;
    }
    const response = await fetch(target, { signal, redirect: 'manual' });
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || location === null) return response;
    await response.body?.cancel();
    if (hop === MAX_REDIRECTS) {
      throw new DownloadError('unreachable', `more than ${MAX_REDIRECTS} redirects from ${url}`);
    }
    target = parseUrl(location, target);
  }
}
