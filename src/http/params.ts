import { BodyTooLarge, cappedChunks } from './capped-body';
import { ApiError, invalidParameter } from './envelope';
import { MalformedForm, multipartBoundary, readMultipart, readUrlencoded, type FormReading, type FormValue } from './form-body';

/** An image sent as a file is at most 10 MB, to every endpoint (docs/api.md, Limits). */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;

/** The most bytes a request body may have: a 10 MB image and 1 MB more for its multipart framing and the other parameters. */
export const MAX_BODY_BYTES = MAX_FILE_BYTES + 1024 * 1024;

/**
 * What a request's parameters may be, checked as its body streams, before any value past it is kept
 * (docs/decisions.md, "Bounded parsing"). Made afresh for each request: it counts.
 */
export interface ParamBudget {
  /** Each parameter's name as it comes, the query string's first; throws an ApiError to refuse the call there. */
  admit(name: string): void;
  /** The most bytes one text parameter may take as sent, name and value. */
  readonly maxTextBytes: number;
  textTooLong(name: string): ApiError;
}

/** At most `max` parameters, of any length the body cap allows. */
export function countedParams(max: number, tooMany: () => ApiError): ParamBudget {
  let count = 0;
  return {
    admit: () => {
      if (++count > max) throw tooMany();
    },
    maxTextBytes: Number.POSITIVE_INFINITY,
    textTooLong: (name) => invalidParameter(`${name} is too long.`),
  };
}

/** Parameters a search or any other endpoint but the data ones may have: they take a few dozen. */
export const MAX_PARAMS = 1000;

export const paramsWithin = (): ParamBudget => countedParams(MAX_PARAMS, () => invalidParameter(`A request may have at most ${MAX_PARAMS} parameters.`));

/**
 * What a body may hold when it must be read to find its credentials: an app key in a form field, which the
 * JavaScript SDK sends after the image in a multipart body. Credentials in a header or the query string are checked
 * before any body is read (auth/middleware.ts); only this case reads one first, and parsing it stays cheap: an
 * urlencoded body of search parameters is small, and a multipart one has few parts, whatever its image weighs.
 */
export const UNAUTHENTICATED_BODY = { maxUrlencodedBytes: 64 * 1024, maxParams: 256 } as const;

const unauthenticatedBudget = (): ParamBudget =>
  countedParams(UNAUTHENTICATED_BODY.maxParams, () =>
    invalidParameter(`A request without credentials in a header or the query string may send at most ${UNAUTHENTICATED_BODY.maxParams} parameters.`),
  );

/** `isFile`: the endpoint's file parameters, read as files whatever their part's headers say. */
export type BodyLimits = { maxBytes: number; budget: ParamBudget; isFile: (name: string) => boolean; unauthenticated?: boolean };

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

function addTo(values: Map<string, FormValue[]>, name: string, value: FormValue): void {
  const list = values.get(name);
  if (list) list.push(value);
  else values.set(name, [value]);
}

/** A form body's parameters added to `values` as they stream, within the cap and the budget. */
async function readForm(request: Request, form: string, limits: BodyLimits, values: Map<string, FormValue[]>, budget: ParamBudget): Promise<void> {
  const cap = bodyCap(form, limits);
  const reading: FormReading = {
    admit: (name) => budget.admit(name),
    maxTextBytes: budget.maxTextBytes,
    textTooLong: (name) => budget.textTooLong(name),
    isFile: limits.isFile,
    maxFileBytes: MAX_FILE_BYTES,
  };
  const add = (name: string, value: FormValue): void => addTo(values, name, value);
  // Media types are case-insensitive (RFC 9110); the boundary parameter is not, so the header is read as is.
  const boundary = form === 'multipart/form-data' ? multipartBoundary(request.headers.get('content-type') ?? '') : undefined;
  try {
    if (form === 'multipart/form-data') {
      if (!boundary) throw new MalformedForm('no boundary');
      await readMultipart(cappedChunks(request, cap.maxBytes), boundary, reading, add);
    } else await readUrlencoded(cappedChunks(request, cap.maxBytes), reading, add);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (error instanceof BodyTooLarge) throw cap.tooLarge();
    if (error instanceof MalformedForm) throw invalidParameter('The request body could not be parsed as form data.');
    throw invalidParameter('The request body could not be read.');
  }
}

/** A text parameter sent as a file part is refused rather than read as absent (docs/decisions.md, "Bounded parsing"). */
const notText = (name: string): never => {
  throw invalidParameter(`${name} must be text, not a file.`);
};

/**
 * A request's parameters, read from the query string and from an urlencoded or multipart body alike, merged,
 * repeated keys kept in order (docs/decisions.md). Typed values are read through their schemas (readParam,
 * param-schema.ts). The query string is read first, the body once the credentials allow (auth/middleware.ts).
 */
export class RequestParams {
  readonly #values: Map<string, FormValue[]>;

  private constructor(values: Map<string, FormValue[]>) {
    this.#values = values;
  }

  /** The query string's parameters: what can be read before the body. */
  static fromQuery(request: Request): RequestParams {
    const values = new Map<string, FormValue[]>();
    for (const [name, value] of new URL(request.url).searchParams) addTo(values, name, value);
    return new RequestParams(values);
  }

  /**
   * These parameters and those of an urlencoded or multipart body, after them, read as the body streams and counted
   * by the limits' budget (the query string's first, body or none). Bodies of other types are never read; one longer than
   * `maxBytes` is refused, and an unauthenticated one past UNAUTHENTICATED_BODY too.
   */
  async withBody(request: Request, limits: BodyLimits): Promise<RequestParams> {
    const values = new Map([...this.#values].map(([name, list]) => [name, [...list]]));
    const budget = limits.unauthenticated ? unauthenticatedBudget() : limits.budget;
    for (const [name, list] of this.#values) list.forEach(() => budget.admit(name));
    const type = request.headers.get('content-type') ?? '';
    const form = FORM_TYPES.find((candidate) => type.toLowerCase().startsWith(candidate));
    if (request.body && form) await readForm(request, form, limits, values, budget);
    return new RequestParams(values);
  }

  names(): string[] {
    return [...this.#values.keys()];
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** Every value of a text parameter; one sent as a file is refused (notText). */
  strings(name: string): string[] {
    return (this.#values.get(name) ?? []).map((value) => (typeof value === 'string' ? value : notText(name)));
  }

  /** The value of a parameter that may be given once: a second value is an error, whichever one was meant. */
  #single(name: string): FormValue | undefined {
    const values = this.#values.get(name) ?? [];
    if (values.length > 1) throw invalidParameter(`${name} must be given only once.`);
    return values[0];
  }

  /** The text value, or undefined when the parameter is absent; one sent as a file is refused (notText). */
  string(name: string): string | undefined {
    const value = this.#single(name);
    return value === undefined || typeof value === 'string' ? value : notText(name);
  }

  /** The file, or undefined when the parameter is absent or sent as text. */
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
