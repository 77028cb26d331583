import { failAt } from './errors';

/** The characters of an fq value, read one code point at a time, with their positions in the fq parameter. */
export class Scanner {
  private readonly chars: string[];
  private index = 0;

  /** `offset`: how many characters of the fq parameter come before `text` (the field name and the colon). */
  constructor(
    readonly field: string,
    text: string,
    private readonly offset: number,
  ) {
    this.chars = Array.from(text);
  }

  get done(): boolean {
    return this.index >= this.chars.length;
  }

  /** The current character, or undefined at the end. */
  peek(): string | undefined {
    return this.chars[this.index];
  }

  next(): string | undefined {
    return this.chars[this.index++];
  }

  /** The 1-based position of the current character in the fq parameter; undefined at the end. */
  position(): number | undefined {
    return this.done ? undefined : this.offset + this.index + 1;
  }

  /** Reads characters while `accept` holds. */
  takeWhile(accept: (char: string) => boolean): string {
    let taken = '';
    for (let char = this.peek(); char !== undefined && accept(char); char = this.peek()) taken += this.next();
    return taken;
  }

  /**
   * Reads a double-quoted string starting at the current `"`; inside, `\"` stands for `"` and `\\` for `\`, and any
   * other backslash is an error.
   */
  readQuoted(): string {
    const start = this.position();
    this.next();
    let value = '';
    for (;;) {
      const at = this.position();
      const char = this.next();
      if (char === undefined) failAt(this.field, 'unterminated quote starting', start);
      if (char === '"') return value;
      if (char === '\\') {
        const escaped = this.next();
        if (escaped === undefined) failAt(this.field, 'unterminated quote starting', start);
        if (escaped !== '"' && escaped !== '\\') {
          failAt(this.field, `invalid escape "\\${escaped}"`, at, '; only \\" and \\\\ may follow a backslash inside quotes');
        }
        value += escaped;
      } else {
        value += char;
      }
    }
  }
}
