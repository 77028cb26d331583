/**
 * Form bodies read as they stream (docs/decisions.md, "Bounded parsing"): each parameter is handed over as soon as it
 * has come, its name checked first, so a call is refused at the first parameter past what its endpoint accepts and
 * nothing of the body is held but the values kept. Written here rather than taken from a library: the multipart
 * parsers for web streams buffer every part whole and stop the body at the first part over a size, where an
 * `/insert` must drop a file past its limit as it comes and go on with the other images (docs/api.md, POST /insert).
 */

export type FormValue = string | File;

/** What a body may carry, told to the reader before it starts. */
export interface FormReading {
  /** Each parameter's name, once it has come; throws to refuse the call there. */
  admit(name: string): void;
  /** The most bytes one text parameter may take as sent (name and value); past it, textTooLong's error is thrown. */
  readonly maxTextBytes: number;
  textTooLong(name: string): Error;
  /** Whether a part of this name is a file whatever its headers say: the endpoint's file parameters. */
  isFile(name: string): boolean;
  /** A file keeps at most this many bytes and one more, enough for its reader to refuse it by its size. */
  readonly maxFileBytes: number;
}

/** A body that is not the form it says it is. */
export class MalformedForm extends Error {
  override name = 'MalformedForm';
}

type Add = (name: string, value: FormValue) => void;

/** Bytes as sent, their text decoded as workerd's form parser decodes it: invalid UTF-8 becomes U+FFFD, a BOM stays. */
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

function concat(pieces: Uint8Array[], size: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const piece of pieces) {
    bytes.set(piece, offset);
    offset += piece.byteLength;
  }
  return bytes;
}

/** Where `needle` starts in `haystack` from `from`, or -1. */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (let at = haystack.indexOf(first, from); at >= 0 && at <= last; at = haystack.indexOf(first, at + 1)) {
    let matched = 1;
    while (matched < needle.length && haystack[at + matched] === needle[matched]) matched++;
    if (matched === needle.length) return at;
  }
  return -1;
}

/** Bytes of one parameter as they come, refused past `maxBytes`. */
class Pieces {
  readonly list: Uint8Array[] = [];
  size = 0;

  push(piece: Uint8Array): void {
    if (piece.byteLength === 0) return;
    this.list.push(piece);
    this.size += piece.byteLength;
  }

  bytes(): Uint8Array {
    return concat(this.list, this.size);
  }
}

/**
 * One `name=value` pair of an urlencoded body, decoded as the query string is: workerd's formData() drops the `%` of
 * a malformed escape that URLSearchParams keeps, and the `&` keeps a leading `?`, which the constructor would strip.
 */
function decodePair(bytes: Uint8Array): [string, string] | undefined {
  return new URLSearchParams(`&${decoder.decode(bytes)}`).entries().next().value;
}

/** The name of a pair cut short, for its error: what came of it, up to its `=`. */
const nameOfCut = (bytes: Uint8Array): string => decodePair(bytes.subarray(0, 256))?.[0] ?? '';

/** An `application/x-www-form-urlencoded` body, pair by pair: `&` is one byte wherever it stands in UTF-8. */
export async function readUrlencoded(chunks: AsyncIterable<Uint8Array>, reading: FormReading, add: Add): Promise<void> {
  let pair = new Pieces();
  // An empty pair (`&&`) is admitted as a nameless parameter: a body of nothing but `&` costs its count too.
  const finish = (): void => {
    const decoded = pair.size === 0 ? undefined : decodePair(pair.bytes());
    pair = new Pieces();
    reading.admit(decoded?.[0] ?? '');
    if (decoded) add(decoded[0], decoded[1]);
  };
  for await (const chunk of chunks) {
    for (let start = 0; start < chunk.length; ) {
      const amp = chunk.indexOf(0x26, start);
      pair.push(chunk.subarray(start, amp < 0 ? chunk.length : amp));
      if (pair.size > reading.maxTextBytes) throw reading.textTooLong(nameOfCut(pair.bytes()));
      if (amp < 0) break;
      finish();
      start = amp + 1;
    }
  }
  finish();
}

/** The boundary of a multipart content type; RFC 2046 allows 70 characters. */
export function multipartBoundary(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^;\s"]{1,70}))\s*(?:;|$)/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** A header section longer than this is no form's. */
const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = new Uint8Array([13, 10]);
const HEADERS_END = new Uint8Array([13, 10, 13, 10]);

/** The name, filename and type of a part, from its header section. */
function partHeaders(bytes: Uint8Array): { name: string; filename: string | undefined; type: string } {
  let disposition = '';
  let type = '';
  for (const line of decoder.decode(bytes).split('\r\n')) {
    const colon = line.indexOf(':');
    const field = line.slice(0, colon).trim().toLowerCase();
    if (field === 'content-disposition') disposition = line.slice(colon + 1);
    else if (field === 'content-type') type = line.slice(colon + 1).trim();
  }
  if (!/^\s*form-data\s*(;|$)/i.test(disposition)) throw new MalformedForm('a part without Content-Disposition: form-data');
  const params = new Map<string, string>();
  for (const match of disposition.matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g)) {
    const key = match[1]!.toLowerCase();
    if (!params.has(key)) params.set(key, match[2] === undefined ? match[3]!.trim() : match[2].replace(/\\(["\\])/g, '$1'));
  }
  const name = params.get('name');
  if (name === undefined) throw new MalformedForm('a part without a name');
  return { name, filename: params.get('filename') ?? params.get('filename*'), type };
}

/** The value of one part as it comes: text within maxTextBytes, or a file kept to one byte past maxFileBytes. */
class PartValue {
  readonly #pieces = new Pieces();
  readonly #file: { filename: string; type: string } | undefined;
  #dropped = false;

  constructor(
    readonly name: string,
    headers: { filename: string | undefined; type: string },
    private readonly reading: FormReading,
  ) {
    const isFile = headers.filename !== undefined || reading.isFile(name);
    this.#file = isFile ? { filename: headers.filename ?? '', type: headers.type || 'application/octet-stream' } : undefined;
  }

  /** Copied: a piece is a view of the chunk it came in, which a small value must not keep whole. */
  push(piece: Uint8Array): void {
    if (!this.#file) {
      this.#pieces.push(piece.slice());
      if (this.#pieces.size > this.reading.maxTextBytes) throw this.reading.textTooLong(this.name);
      return;
    }
    if (this.#dropped) return;
    const room = this.reading.maxFileBytes + 1 - this.#pieces.size;
    this.#pieces.push(piece.byteLength > room ? piece.slice(0, room) : piece.slice());
    this.#dropped = piece.byteLength >= room;
  }

  value(): FormValue {
    if (!this.#file) return decoder.decode(this.#pieces.bytes());
    return new File(this.#pieces.list, this.#file.filename, { type: this.#file.type });
  }
}

/**
 * A `multipart/form-data` body, part by part. The body is read as if it began with a line break, so that the first
 * delimiter is found as every other one is; what comes before it (a preamble) and after the last (an epilogue) is
 * skipped, as RFC 2046 says.
 */
export async function readMultipart(chunks: AsyncIterable<Uint8Array>, boundary: string, reading: FormReading, add: Add): Promise<void> {
  const delimiter = new TextEncoder().encode(`\r\n--${boundary}`);
  let buffer: Uint8Array = CRLF;
  type State = 'preamble' | 'delimiter' | 'headers' | 'body' | 'done';
  let state = 'preamble' as State;
  let part: PartValue | undefined;

  /** Moves on as far as the bytes at hand allow; false when it needs more. */
  const step = (): boolean => {
    if (state === 'preamble' || state === 'body') {
      const at = indexOfBytes(buffer, delimiter);
      // Short of a delimiter, all but its length less one byte is the part's (or the preamble's) for sure.
      const keep = at >= 0 ? at : Math.max(0, buffer.length - delimiter.length + 1);
      part?.push(buffer.subarray(0, keep));
      if (at < 0) {
        buffer = buffer.slice(keep);
        return false;
      }
      if (part) add(part.name, part.value());
      part = undefined;
      buffer = buffer.subarray(at + delimiter.length);
      state = 'delimiter';
      return true;
    }
    if (state === 'delimiter') {
      if (buffer.length < 2) return false;
      if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
        state = 'done';
        return false;
      }
      const end = indexOfBytes(buffer, CRLF);
      if (end < 0) {
        if (buffer.length > MAX_HEADER_BYTES) throw new MalformedForm('a delimiter line without its end');
        return false;
      }
      // Transport padding (RFC 2046): spaces and tabs only.
      if (!buffer.subarray(0, end).every((byte) => byte === 0x20 || byte === 0x09)) throw new MalformedForm('a delimiter followed by other text');
      buffer = buffer.subarray(end + 2);
      state = 'headers';
      return true;
    }
    if (state === 'headers') {
      if (buffer.length < 2) return false;
      // A part without headers has no name.
      if (buffer[0] === 13 && buffer[1] === 10) throw new MalformedForm('a part without headers');
      const end = indexOfBytes(buffer, HEADERS_END);
      if (end < 0) {
        if (buffer.length > MAX_HEADER_BYTES) throw new MalformedForm('a header section too long');
        return false;
      }
      const headers = partHeaders(buffer.subarray(0, end));
      reading.admit(headers.name);
      part = new PartValue(headers.name, headers, reading);
      buffer = buffer.subarray(end + 4);
      state = 'body';
      return true;
    }
    return false;
  };

  for await (const chunk of chunks) {
    if (state === 'done') continue;
    const joined = new Uint8Array(buffer.length + chunk.length);
    joined.set(buffer);
    joined.set(chunk, buffer.length);
    buffer = joined;
    while (step());
  }
  if (state !== 'done') throw new MalformedForm('a body cut short of its closing delimiter');
}
