import { BodyTooLarge, readCapped } from './capped-body';
import { ApiError, invalidParameter } from './envelope';

type ParamValue = string | File;

/**
 * The most bytes a request body may have: a query image is at most 10 MB (docs/api.md, Limits) and 1 MB more leaves room for its
 * multipart framing and the other parameters.
 */
export const MAX_BODY_BYTES = 11 * 1024 * 1024;

/**
 * What a body may hold when it must be read to find its credentials: an app key in a form field, which the
 * JavaScript SDK sends after the image in a multipart body. Credentials in a header or the query string are checked
 * before any body is read (auth/middleware.ts); only this case reads one first, and parsing it stays cheap: an
 * urlencoded body of search parameters is small, and a multipart one has few parts, whatever its image weighs.
 */
export const UNAUTHENTICATED_BODY = { maxUrlencodedBytes: 64 * 1024, maxParts: 256 } as const;

export type BodyLimits = { maxBytes: number; unauthenticated?: boolean };

const FORM_TYPES = ['multipart/form-data', 'application/x-www-form-urlencoded'];

/** The body limit a request is held to, and the error that says it was passed. */
type BodyCap = { maxBytes: number; tooLarge: () => ApiError };

function bodyCap(form: string, { maxBytes, unauthenticated }: BodyLimits): BodyCap {
  if (unauthenticated && form === 'application/x-www-form-urlencoded') {
    const cap = UNAUTHENTICATED_BODY.maxUrlencodedBytes;
    const message = `A request without credentials in a header or the query string may send at most ${cap / 1024}KB of urlencoded parameters.`;
    return { maxBytes: cap, tooLarge: () => new ApiError(413, message) };
  }
  return { maxBytes, tooLarge: () => new ApiError(413, `The request body exceeds the ${Math.floor(maxBytes / (1024 * 1024))}MB limit.`) };
}

function addTo(values: Map<string, ParamValue[]>, name: string, value: ParamValue): void {
  const list = values.get(name);
  if (list) list.push(value);
  else values.set(name, [value]);
}

/** How many parts a multipart body has, counted by its delimiters without parsing it. */
function partCount(bytes: Uint8Array, type: string): number {
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!boundary) return 0;
  const delimiter = new TextEncoder().encode(`--${boundary}`);
  let count = 0;
  for (let at = bytes.indexOf(delimiter[0]!); at >= 0 && at + delimiter.length <= bytes.length; at = bytes.indexOf(delimiter[0]!, at + 1)) {
    let matched = 1;
    while (matched < delimiter.length && bytes[at + matched] === delimiter[matched]) matched++;
    if (matched === delimiter.length) {
      count++;
      at += delimiter.length - 1;
    }
  }
  // The last delimiter closes the body.
  return Math.max(0, count - 1);
}

/**
 * Parsed as the query string is: workerd's formData() drops the `%` of a malformed escape that URLSearchParams keeps.
 * The `&` keeps a leading `?`, which the constructor would strip from a string but the form parser does not.
 */
const urlencodedForm = (body: Uint8Array): URLSearchParams => new URLSearchParams(`&${new TextDecoder().decode(body)}`);

async function multipartForm(body: Uint8Array, type: string): Promise<FormData> {
  try {
    return await new Response(body, { headers: { 'content-type': type } }).formData();
  } catch {
    throw invalidParameter('The request body could not be parsed as form data.');
  }
}

/** The whole body, refused when its `content-length` says too much, or as soon as too much has come. */
async function readBody(request: Request, cap: BodyCap): Promise<Uint8Array> {
  try {
    return await readCapped(request, cap.maxBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge) throw cap.tooLarge();
    throw invalidParameter('The request body could not be read.');
  }
}

/**
 * A request's parameters, read from the query string and from an urlencoded or multipart body alike, merged,
 * repeated keys kept in order (docs/decisions.md). Typed values are read through their schemas (readParam,
 * param-schema.ts). The query string is read first, the body once the credentials allow (auth/middleware.ts).
 */
export class RequestParams {
  readonly #values: Map<string, ParamValue[]>;

  private constructor(values: Map<string, ParamValue[]>) {
    this.#values = values;
  }

  /** The query string's parameters: what can be read before the body. */
  static fromQuery(request: Request): RequestParams {
    const values = new Map<string, ParamValue[]>();
    for (const [name, value] of new URL(request.url).searchParams) addTo(values, name, value);
    return new RequestParams(values);
  }

  /**
   * These parameters and those of an urlencoded or multipart body, after them. Bodies of other types are never read;
   * one longer than `maxBytes` is refused, and an unauthenticated one past UNAUTHENTICATED_BODY too.
   */
  async withBody(request: Request, limits: BodyLimits): Promise<RequestParams> {
    const values = new Map([...this.#values].map(([name, list]) => [name, [...list]]));
    // Media types are case-insensitive (RFC 9110); the boundary parameter is not, so the header is passed on as is.
    const type = request.headers.get('content-type') ?? '';
    const form = FORM_TYPES.find((candidate) => type.toLowerCase().startsWith(candidate));
    if (!request.body || !form) return new RequestParams(values);

    const body = await readBody(request, bodyCap(form, limits));
    if (limits.unauthenticated && form === 'multipart/form-data' && partCount(body, type) > UNAUTHENTICATED_BODY.maxParts) {
      throw invalidParameter(`A request without credentials in a header or the query string may send at most ${UNAUTHENTICATED_BODY.maxParts} form parts.`);
    }
    for (const [name, value] of form === 'multipart/form-data' ? await multipartForm(body, type) : urlencodedForm(body)) {
      addTo(values, name, value);
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
