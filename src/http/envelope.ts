import type { DataError } from './messages';

export type Status = 'OK' | 'warning' | 'fail';

type HttpErrorStatus = 400 | 401 | 403 | 404 | 413 | 429 | 500 | 503;

/**
 * Data endpoints report objects with a numeric code; search endpoints report the spec's message strings
 * (DESIGN.md). General messages have no code in the spec: data endpoints give them the HTTP status as code.
 */
export type ErrorStyle = 'data' | 'search';
export type DataErrorEntry = { index?: number; im_name?: string; error_code: number; error_message: string };
export type ErrorEntry = DataErrorEntry | string;

export const dataErrorEntry = (error: DataError, item?: { index: number; im_name?: string | undefined }): DataErrorEntry => ({
  ...(item ? { index: item.index } : {}),
  ...(item?.im_name === undefined ? {} : { im_name: item.im_name }),
  error_code: error.code,
  error_message: error.message,
});

/**
 * A request that cannot be answered with `OK`. Thrown anywhere below a route and turned into the spec's envelope
 * (with the route's `method` and error style) by the app's error handler.
 */
export class ApiError extends Error {
  readonly httpStatus: HttpErrorStatus;
  readonly code: number | undefined;

  constructor(httpStatus: HttpErrorStatus, message: string, code?: number) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
  }

  static data(httpStatus: HttpErrorStatus, error: DataError): ApiError {
    return new ApiError(httpStatus, error.message, error.code);
  }

  entry(style: ErrorStyle): ErrorEntry {
    return style === 'search' ? this.message : { error_code: this.code ?? this.httpStatus, error_message: this.message };
  }
}

/** A malformed or out-of-range parameter. */
export const invalidParameter = (message: string): ApiError => new ApiError(400, message);
