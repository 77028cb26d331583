import { ApiError, invalidParameter } from './envelope';

type ParamValue = string | File;

const BOOLEANS: Record<string, boolean> = { true: true, True: true, '1': true, false: false, False: false, '0': false };

/**
 * A request's parameters, read from the query string and from an urlencoded or multipart body alike, merged,
 * repeated keys kept in order (DESIGN.md). Typed getters turn malformed values into 400s in the spec's envelope.
 */
export class RequestParams {
  readonly #values: Map<string, ParamValue[]>;

  private constructor(values: Map<string, ParamValue[]>) {
    this.#values = values;
  }

  static async from(request: Request): Promise<RequestParams> {
    const values = new Map<string, ParamValue[]>();
    const add = (name: string, value: ParamValue): void => {
      const list = values.get(name);
      if (list) list.push(value);
      else values.set(name, [value]);
    };
    for (const [name, value] of new URL(request.url).searchParams) add(name, value);

    const type = request.headers.get('content-type') ?? '';
    if (request.body && (type.startsWith('multipart/form-data') || type.startsWith('application/x-www-form-urlencoded'))) {
      let form: FormData;
      try {
        form = await request.formData();
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

  /** The first text value, or undefined when the parameter is absent. */
  string(name: string): string | undefined {
    return this.strings(name)[0];
  }

  file(name: string): File | undefined {
    return (this.#values.get(name) ?? []).find((value): value is File => typeof value !== 'string');
  }

  integer(name: string, options: { default: number; min: number; max: number }): number {
    const raw = this.string(name);
    if (raw === undefined || raw === '') return options.default;
    if (!/^[+-]?\d+$/.test(raw.trim())) throw invalidParameter(`${name} must be an integer.`);
    const value = Number(raw);
    if (value < options.min || value > options.max) {
      throw invalidParameter(`${name} must be between ${options.min} and ${options.max}.`);
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.string(name);
    if (raw === undefined || raw === '') return fallback;
    const value = BOOLEANS[raw.trim()];
    if (value === undefined) throw invalidParameter(`${name} must be true or false.`);
    return value;
  }

  /** Required text parameter; `error` says what the route answers when it is missing. */
  required(name: string, error: ApiError = invalidParameter(`${name} is required.`)): string {
    const value = this.string(name);
    if (value === undefined || value === '') throw error;
    return value;
  }
}
