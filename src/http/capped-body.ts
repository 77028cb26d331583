/** A body past its cap: the message says by how much it was found to be, for the caller's own error. */
export class BodyTooLarge extends Error {
  override name = 'BodyTooLarge';
}

/**
 * The chunks of a request's or response's body as they come, refused with BodyTooLarge before a byte of it is read
 * when its `content-length` says more than `maxBytes`, and as soon as more than `maxBytes` have come whatever it said.
 * The stream is cancelled whenever the reading stops early (too large, or the caller's own refusal). A stream that
 * fails is the caller's to answer, as is BodyTooLarge.
 */
export async function* cappedChunks(message: Request | Response, maxBytes: number): AsyncGenerator<Uint8Array> {
  const declared = Number(message.headers.get('content-length') ?? 0);
  if (declared > maxBytes) throw new BodyTooLarge(`${declared} bytes`);
  if (!message.body) return;
  const reader = message.body.getReader();
  let size = 0;
  let finished = false;
  try {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      size += chunk.value.byteLength;
      if (size > maxBytes) throw new BodyTooLarge(`over ${maxBytes} bytes`);
      yield chunk.value;
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

/** The whole body, within `maxBytes` as cappedChunks holds it. */
export async function readCapped(message: Request | Response, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of cappedChunks(message, maxBytes)) chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((size, chunk) => size + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
