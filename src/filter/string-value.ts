import { FilterError, failAt } from './errors';
import { Scanner } from './scanner';

/**
 * The value of an fq on a string field: one exact, case-sensitive value, or several joined with `OR` (any case),
 * optionally enclosed in one pair of parentheses: `brand:nike`, `brand:nike OR "new balance"`, `brand:(a OR b)`.
 * A value containing white space (space, tab, LF, FF, CR), parentheses, `"`, `:` or `\`, or a value that is the
 * word OR itself, must be double-quoted; inside quotes `\"` is `"` and `\\` is `\`. `""` is the empty string.
 */

type Lexeme =
  | { kind: 'value'; value: string; position: number }
  | { kind: 'or'; position: number }
  | { kind: 'open' | 'close'; position: number };

const WHITESPACE = new Set([' ', '\t', '\n', '\f', '\r']);
/** Characters a value can hold only inside double quotes. */
const SPECIAL = new Set([...WHITESPACE, '(', ')', '"', ':', '\\']);
const OR_WORD = /^or$/i;

/** Whether a string value can be written without quotes. */
export const isBareStringValue = (value: string): boolean =>
  value !== '' && !OR_WORD.test(value) && !Array.from(value).some((char) => SPECIAL.has(char));

function lex(scanner: Scanner): Lexeme[] {
  const lexemes: Lexeme[] = [];
  for (;;) {
    scanner.takeWhile((char) => WHITESPACE.has(char));
    const position = scanner.position();
    const char = scanner.peek();
    if (char === undefined || position === undefined) return lexemes;
    if (char === '"') {
      lexemes.push({ kind: 'value', value: scanner.readQuoted(), position });
    } else if (char === '(' || char === ')') {
      scanner.next();
      lexemes.push({ kind: char === '(' ? 'open' : 'close', position });
    } else if (SPECIAL.has(char)) {
      failAt(scanner.field, `character "${char}"`, position, ' must be inside a double-quoted value');
    } else {
      const word = scanner.takeWhile((next) => !SPECIAL.has(next));
      lexemes.push(OR_WORD.test(word) ? { kind: 'or', position } : { kind: 'value', value: word, position });
    }
  }
}

const describe = (lexeme: Lexeme): string =>
  lexeme.kind === 'or' ? 'OR' : lexeme.kind === 'open' ? '"("' : lexeme.kind === 'close' ? '")"' : 'a value';

/** Parses a string field's fq value into its distinct values, in order. */
export function parseStringValue(field: string, text: string, offset: number): string[] {
  const lexemes = lex(new Scanner(field, text, offset));
  if (lexemes.length === 0) throw new FilterError(field, 'value is empty');
  let index = 0;
  const opening = lexemes[0]?.kind === 'open' ? lexemes[index++] : undefined;
  const values: string[] = [];

  const expectValue = (after: string): void => {
    const lexeme = lexemes[index++];
    if (lexeme?.kind === 'value') {
      if (!values.includes(lexeme.value)) values.push(lexeme.value);
      return;
    }
    const found = lexeme ? `, found ${describe(lexeme)}` : '';
    const hint = lexeme?.kind === 'or' ? ' (quote "OR" to match it as a value)' : '';
    failAt(field, `expected a value${after}`, lexeme?.position, found + hint);
  };

  expectValue(opening ? ' after "("' : '');
  for (;;) {
    const lexeme = lexemes[index++];
    if (lexeme === undefined) {
      if (opening) failAt(field, 'unbalanced parenthesis', opening.position);
      return values;
    }
    if (lexeme.kind === 'or') {
      expectValue(' after OR');
    } else if (lexeme.kind === 'close') {
      if (!opening) failAt(field, 'unbalanced parenthesis', lexeme.position);
      const rest = lexemes[index];
      if (rest) failAt(field, `unexpected ${describe(rest)}`, rest.position, '; nothing may follow the closing parenthesis');
      return values;
    } else if (lexeme.kind === 'value') {
      failAt(field, 'expected OR between values', lexeme.position, '; a value containing spaces must be double-quoted');
    } else {
      failAt(field, 'unexpected "("', lexeme.position, '; parentheses may only enclose the whole list of values');
    }
  }
}
