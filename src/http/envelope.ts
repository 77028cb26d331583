import type { DataError } from './messages';

export type Status = 'OK' | 'warning' | 'fail';

/**
 * The HTTP status a failure would have. The API endpoints answer every envelope with 200 (docs/decisions.md: the
 * official clients read only 200 answers); the admin API and the console's image endpoint, which no official client
 * calls, answer these.
 */
type HttpErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 503 | 507;

/** Numbered data errors are objects; every other message (general, search, parameters) is a plain string (docs/api.md, Messages). */
export type DataErrorEntry = { index?: number; im_name?: string; error_code: number; error_message: string };
export type ErrorEntry = DataErrorEntry | string;

export const dataErrorEntry = (error: DataError, item?: { index: number; im_name?: string | undefined }): DataErrorEntry => ({
  ...(item ? { index: item.index } : {}),
  ...(item?.im_name === undefined ? {} : { im_name: item.im_name }),
  error_code: error.code,
  error_message: error.message,
});

/** Seconds a busy answer asks the client to wait before trying again (`Retry-After`). */
const BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * A request that cannot be answered with `OK`. Thrown anywhere below a route and turned into the API's envelope
 * (with the route's `method`) by the app's error handler.
 */
export class ApiError extends Error {
  readonly httpStatus: HttpErrorStatus;
  /** The code of a numbered data error (docs/api.md, Messages). */
  readonly code: number | undefined;
  readonly #retryAfterSeconds: number | undefined;

  constructor(httpStatus: HttpErrorStatus, message: string, code?: number, options: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
    this.#retryAfterSeconds = options.retryAfterSeconds;
  }

  static data(httpStatus: HttpErrorStatus, error: DataError): ApiError {
    return new ApiError(httpStatus, error.message, error.code);
  }

  /** Busy answers (pending limit, queue, inference, rate limits) tell the client when to come back. */
  get retryAfterSeconds(): number | undefined {
    return this.httpStatus === 429 || this.httpStatus === 503 ? (this.#retryAfterSeconds ?? BUSY_RETRY_AFTER_SECONDS) : undefined;
  }

  entry(): ErrorEntry {
    return this.code === undefined ? this.message : { error_code: this.code, error_message: this.message };
  }
}

/** A malformed or out-of-range parameter. */
export const invalidParameter = (message: string): ApiError => new ApiError(400, message);
