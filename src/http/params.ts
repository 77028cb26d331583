import { ApiError, invalidParameter } from './envelope';

type ParamValue = string | File;

/**
 * The most bytes a request body may have. Parameters are read before authentication (an app key may come as a form
 * field), so this bounds what anyone can make the Worker read: a query image is at most 10 MB (spec 8) and 1 MB more
 * leaves room for its multipart framing and the other parameters.
 */
export const MAX_BODY_BYTES = 11 * 1024 * 1024;

const FORM_TYPES = ['multipart/form-data', 'application/x-www-form-urlencoded'];

const bodyTooLarge = (maxBytes: number): ApiError =>
  new ApiError(413, `The request body exceeds the ${Math.floor(maxBytes / (1024 * 1024))}MB limit.`);

/** The whole body, refused with 413 as soon as more than `maxBytes` have come, whatever its `content-length` said. */
async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Blob> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      throw invalidParameter('The request body could not be read.');
    }
    if (chunk.done) return new Blob(chunks);
    size += chunk.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw bodyTooLarge(maxBytes);
    }
    chunks.push(chunk.value);
  }
}

/**
 * A request's parameters, read from the query string and from an urlencoded or multipart body alike, merged,
 * repeated keys kept in order (docs/decisions.md). Typed values are read through their schemas (readParam, param-schema.ts).
 */
export class RequestParams {
  readonly #values: Map<string, ParamValue[]>;

  private constructor(values: Map<string, ParamValue[]>) {
    this.#values = values;
  }

  /** Bodies of other types are never read; any body longer than `maxBodyBytes` is refused with 413. */
  static async from(request: Request, maxBodyBytes = MAX_BODY_BYTES): Promise<RequestParams> {
    const values = new Map<string, ParamValue[]>();
    const add = (name: string, value: ParamValue): void => {
      const list = values.get(name);
      if (list) list.push(value);
      else values.set(name, [value]);
    };
    for (const [name, value] of new URL(request.url).searchParams) add(name, value);

    // A body declared too long is refused before a byte of it is read; one sent without a length, while it streams.
    if (Number(request.headers.get('content-length') ?? 0) > maxBodyBytes) throw bodyTooLarge(maxBodyBytes);
    // Media types are case-insensitive (RFC 9110); the boundary parameter is not, so the header is passed on as is.
    const type = request.headers.get('content-type') ?? '';
    if (request.body && FORM_TYPES.some((form) => type.toLowerCase().startsWith(form))) {
      const body = await readCapped(request.body, maxBodyBytes);
      let form: FormData;
      try {
        form = await new Response(body, { headers: { 'content-type': type } }).formData();
      } catch {
        throw invalidParameter('The request body could not be parsed as form data.');
      }
      for (const [name, value] of form) add(name, value);
    }
    return new RequestParams(values);
  }

  names(): string[] {
    return [...this.#values.keys()];
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** Every text value of a parameter; uploaded files are not text. */
  strings(name: string): string[] {
    return (this.#values.get(name) ?? []).filter((value): value is string => typeof value === 'string');
  }

  /** The value of a parameter that may be given once: a second value is an error, whichever one was meant. */
  #single(name: string): ParamValue | undefined {
    const values = this.#values.get(name) ?? [];
    if (values.length > 1) throw invalidParameter(`${name} must be given only once.`);
    return values[0];
  }

  /** The text value, or undefined when the parameter is absent (or is a file). */
  string(name: string): string | undefined {
    const value = this.#single(name);
    return typeof value === 'string' ? value : undefined;
  }

  file(name: string): File | undefined {
    const value = this.#single(name);
    return typeof value === 'string' ? undefined : value;
  }

  /** Required text parameter; `error` says what the route answers when it is missing. */
  required(name: string, error: ApiError = invalidParameter(`${name} is required.`)): string {
    const value = this.string(name);
    if (value === undefined || value === '') throw error;
    return value;
  }
}
