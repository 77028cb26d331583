/**
 * The one error the filter language throws: a clear English message for the caller to return as is, e.g.
 * `fq price: range must be min,max with min <= max.` or `fq tag: unbalanced parenthesis at 7.`
 * Positions ("at 7") are 1-based and count characters (code points) of the whole fq parameter, field name included.
 */
export class FilterError extends Error {
  override name = 'FilterError';
  /** The field the fq names, when it could be read. */
  readonly field: string | undefined;
  /** The 1-based character position the message points at, if any. */
  readonly position: number | undefined;

  constructor(field: string | undefined, detail: string, position?: number) {
    super(`fq${field === undefined ? '' : ` ${field}`}: ${detail}.`);
    this.field = field;
    this.position = position;
  }
}

/**
 * Throws a FilterError reading `<detail> at <position><suffix>`, or `<detail> at end of value<suffix>` where there is
 * no position.
 */
export function failAt(field: string, detail: string, position: number | undefined, suffix = ''): never {
  throw new FilterError(field, `${detail} at ${position === undefined ? 'end of value' : position}${suffix}`, position);
}

/** User text quoted for a message, shortened to its first 40 characters. */
export function excerpt(text: string): string {
  const chars = Array.from(text);
  return JSON.stringify(chars.length > 40 ? `${chars.slice(0, 40).join('')}…` : text);
}
