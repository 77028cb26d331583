/** A body past its cap: the message says by how much it was found to be, for the caller's own error. */
export class BodyTooLarge extends Error {
  override name = 'BodyTooLarge';
}

/**
 * The whole body of a request or response, refused with BodyTooLarge before a byte of it is read when its
 * `content-length` says more than `maxBytes`, and as soon as more than `maxBytes` have come whatever it said (the
 * stream is cancelled then). A stream that fails is the caller's to answer, as is BodyTooLarge.
 */
export async function readCapped(message: Request | Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(message.headers.get('content-length') ?? 0);
  if (declared > maxBytes) throw new BodyTooLarge(`${declared} bytes`);
  if (!message.body) return new Uint8Array(0);
  const reader = message.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge(`over ${maxBytes} bytes`);
    }
    chunks.push(chunk.value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
