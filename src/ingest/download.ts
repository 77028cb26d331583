/** Fetching an image from its URL: with a total timeout and a byte cap, streamed so a huge body is cut off early. */

export type DownloadFailure = 'timeout' | 'unreachable' | 'too_large';

export class DownloadError extends Error {
  override name = 'DownloadError';
  readonly reason: DownloadFailure;

  constructor(reason: DownloadFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

export async function downloadImage(url: string, options: { timeoutMs: number; maxBytes: number }): Promise<Uint8Array> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DownloadError('unreachable', `not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new DownloadError('unreachable', `unsupported scheme ${parsed.protocol}`);
  }
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await fetch(parsed, { signal, redirect: 'follow' });
    if (!response.ok || !response.body) throw new DownloadError('unreachable', `HTTP ${response.status} from ${url}`);
    const declared = Number(response.headers.get('content-length') ?? '0');
    if (declared > options.maxBytes) throw new DownloadError('too_large', `${declared} bytes at ${url}`);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > options.maxBytes) throw new DownloadError('too_large', `over ${options.maxBytes} bytes at ${url}`);
      chunks.push(chunk);
    }
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return bytes;
  } catch (error) {
    if (error instanceof DownloadError) throw error;
    if (signal.aborted) throw new DownloadError('timeout', `timed out after ${options.timeoutMs} ms: ${url}`);
    throw new DownloadError('unreachable', `${String(error)}: ${url}`);
  }
}
