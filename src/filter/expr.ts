import type { TextExpr } from './types';

/**
 * Constructors of text expressions in the one shape the parser and the canonical form agree on: `and`/`or` flattened
 * (an `and` holds no `and`, an `or` no `or`; one operand is that operand) and double negation removed. Every such
 * rewriting keeps the meaning, since an expression is only evaluated on an image that has the field.
 */
const flatten = (kind: 'and' | 'or', operands: TextExpr[]): TextExpr => {
  const flat = operands.flatMap((operand) => (operand.kind === kind ? operand.operands : [operand]));
  return flat.length === 1 ? flat[0]! : { kind, operands: flat };
};

export const allOf = (operands: TextExpr[]): TextExpr => flatten('and', operands);
export const anyOf = (operands: TextExpr[]): TextExpr => flatten('or', operands);
export const negate = (operand: TextExpr): TextExpr => (operand.kind === 'not' ? operand.operand : { kind: 'not', operand });
export const term = (tokens: string[]): TextExpr => ({ kind: 'term', tokens });

/** Whether a set of tokens satisfies an expression. */
export function evaluate(expr: TextExpr, tokens: ReadonlySet<string>): boolean {
  switch (expr.kind) {
    case 'term':
      return expr.tokens.every((token) => tokens.has(token));
    case 'not':
      return !evaluate(expr.operand, tokens);
    case 'and':
      return expr.operands.every((operand) => evaluate(operand, tokens));
    case 'or':
      return expr.operands.some((operand) => evaluate(operand, tokens));
  }
}
