import { FilterError, failAt } from './errors';
import { allOf, anyOf, negate, term } from './expr';
import { Scanner } from './scanner';
import { isDelimiter, tokenize } from './tokens';
import { MAX_PAREN_DEPTH, type DefaultOperator, type TextExpr } from './types';

/**
 * The value of an fq on a text field (docs/api.md, The filter language), read by a lexer and a recursive-descent parser:
 *
 *     query   := or EOF
 *     or      := and (("OR" | <adjacent, when the default operator is OR>) and)*
 *     and     := unary (("AND" | <adjacent, when the default operator is AND>) unary)*
 *     unary   := "NOT"* primary
 *     primary := word | phrase | "(" or ")"
 *
 * - Operators AND, OR, NOT are words in any case; precedence NOT > AND > OR; parentheses override, at most 32 deep.
 * - Delimiters (tokens.ts) separate words and are never matched; `(`, `)` and `"` are delimiters used as syntax.
 *   So `a b`, `a,b` and `a。b` are two terms joined by the default operator (AND unless configured to OR), and
 *   `a NOT b` is `a AND NOT b` (`a OR NOT b` with default OR), the implicit operator taking its explicit twin's rank.
 * - A word is one term; it matches an image whose field has that token (case-insensitively).
 * - A phrase, `"..."` with `\"` and `\\` escapes, is one term made of all the tokens of its text: it matches when every
 *   one of them is present, in any order and position (`"blue-green"` and `"green blue"` both need blue and green).
 *   Quoting is also how to search for the words and, or, not: `"not"`. An empty phrase is an error.
 */

type Lexeme =
  | { kind: 'term'; tokens: string[]; position: number }
  | { kind: 'and' | 'or' | 'not' | 'open' | 'close'; position: number };

const OPERATORS: ReadonlySet<string> = new Set(['and', 'or', 'not']);

function lex(scanner: Scanner): Lexeme[] {
  const lexemes: Lexeme[] = [];
  for (let char = scanner.peek(); char !== undefined; char = scanner.peek()) {
    const position = scanner.position()!;
    if (char === '(' || char === ')') {
      scanner.next();
      lexemes.push({ kind: char === '(' ? 'open' : 'close', position });
    } else if (char === '"') {
      const tokens = tokenize(scanner.readQuoted());
      if (tokens.length === 0) failAt(scanner.field, 'empty phrase', position, ' (a phrase needs at least one word)');
      lexemes.push({ kind: 'term', tokens, position });
    } else if (isDelimiter(char)) {
      scanner.next();
    } else {
      const word = scanner.takeWhile((next) => !isDelimiter(next));
      const lower = word.toLowerCase();
      if (OPERATORS.has(lower)) lexemes.push({ kind: lower as 'and' | 'or' | 'not', position });
      else {
        const tokens = tokenize(word);
        if (tokens.length > 0) lexemes.push({ kind: 'term', tokens, position });
      }
    }
  }
  return lexemes;
}

const NAMES = { term: 'a term', and: 'AND', or: 'OR', not: 'NOT', open: '"("', close: '")"' } as const;

class TextParser {
  private index = 0;
  private depth = 0;

  constructor(
    private readonly field: string,
    private readonly lexemes: Lexeme[],
    private readonly defaultOperator: DefaultOperator,
  ) {}

  parse(): TextExpr {
    const expr = this.parseOr();
    const rest = this.lexemes[this.index];
    if (rest === undefined) return expr;
    // Every other lexeme would have been read as an operator or an operand: only a `)` with no `(` is left here.
    return failAt(this.field, rest.kind === 'close' ? 'unbalanced parenthesis' : `unexpected ${NAMES[rest.kind]}`, rest.position);
  }

  private startsOperand(lexeme: Lexeme | undefined): boolean {
    return lexeme !== undefined && (lexeme.kind === 'term' || lexeme.kind === 'open' || lexeme.kind === 'not');
  }

  /** `after` names what came before the first operand, for messages. */
  private parseOr(after?: string): TextExpr {
    const operands = [this.parseAnd(after)];
    for (;;) {
      const next = this.lexemes[this.index];
      if (next?.kind === 'or') {
        this.index++;
        operands.push(this.parseAnd('OR'));
      } else if (this.defaultOperator === 'OR' && this.startsOperand(next)) {
        operands.push(this.parseAnd());
      } else {
        return anyOf(operands);
      }
    }
  }

  private parseAnd(after?: string): TextExpr {
    const operands = [this.parseUnary(after)];
    for (;;) {
      const next = this.lexemes[this.index];
      if (next?.kind === 'and') {
        this.index++;
        operands.push(this.parseUnary('AND'));
      } else if (this.defaultOperator === 'AND' && this.startsOperand(next)) {
        operands.push(this.parseUnary());
      } else {
        return allOf(operands);
      }
    }
  }

  /** NOT is read in a loop, not by recursion, so a long run of NOTs costs no stack. */
  private parseUnary(after?: string): TextExpr {
    let negations = 0;
    let context = after;
    while (this.lexemes[this.index]?.kind === 'not') {
      this.index++;
      negations++;
      context = 'NOT';
    }
    const primary = this.parsePrimary(context);
    return negations % 2 === 1 ? negate(primary) : primary;
  }

  private parsePrimary(after: string | undefined): TextExpr {
    const lexeme = this.lexemes[this.index++];
    if (lexeme?.kind === 'term') return term(lexeme.tokens);
    if (lexeme?.kind === 'open') {
      if (++this.depth > MAX_PAREN_DEPTH) failAt(this.field, `more than ${MAX_PAREN_DEPTH} nested parentheses`, lexeme.position);
      const inner = this.parseOr('"("');
      if (this.lexemes[this.index]?.kind !== 'close') failAt(this.field, 'unbalanced parenthesis', lexeme.position);
      this.index++;
      this.depth--;
      return inner;
    }
    const found = lexeme ? `, found ${NAMES[lexeme.kind]}` : '';
    return failAt(this.field, `expected a term${after === undefined ? '' : ` after ${after}`}`, lexeme?.position, found);
  }
}

/** Parses a text field's fq value; `offset` is the number of characters before it in the fq parameter. */
export function parseTextQuery(field: string, text: string, offset: number, defaultOperator: DefaultOperator): TextExpr {
  const lexemes = lex(new Scanner(field, text, offset));
  if (lexemes.length === 0) {
    throw new FilterError(field, text === '' ? 'value is empty' : 'value has no search terms (delimiters are not matched)');
  }
  return new TextParser(field, lexemes, defaultOperator).parse();
}
