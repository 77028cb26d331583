import { isBareStringValue } from './string-value';
import type { Condition, Filter, TextExpr } from './types';

/**
 * The canonical fq form of a parsed filter, for query info and round trips: parsing it gives back the same
 * conditions, whatever the default operator. Text: explicit upper-case operators, single spaces, parentheses only
 * where precedence needs them, terms lower-cased, a multi-token term (or one that is an operator word) as a phrase.
 * String: values joined with ` OR `, quoted only when they must be. Numbers: JavaScript's shortest form.
 * Spelling out every operator can make the canonical form longer than the input, even past MAX_FQ_LENGTH.
 */

const quote = (text: string): string => `"${text.replace(/[\\"]/g, (char) => `\\${char}`)}"`;

function formatTerm(tokens: string[]): string {
  const [only] = tokens;
  return tokens.length === 1 && only !== undefined && !['and', 'or', 'not'].includes(only) ? only : quote(tokens.join(' '));
}

export function formatTextExpr(expr: TextExpr): string {
  switch (expr.kind) {
    case 'term':
      return formatTerm(expr.tokens);
    case 'not': {
      const operand = formatTextExpr(expr.operand);
      return expr.operand.kind === 'term' ? `NOT ${operand}` : `NOT (${operand})`;
    }
    case 'and':
      return expr.operands
        .map((operand) => (operand.kind === 'or' ? `(${formatTextExpr(operand)})` : formatTextExpr(operand)))
        .join(' AND ');
    case 'or':
      return expr.operands.map(formatTextExpr).join(' OR ');
  }
}

function formatValue(condition: Condition): string {
  switch (condition.kind) {
    case 'string':
      return condition.values.map((value) => (isBareStringValue(value) ? value : quote(value))).join(' OR ');
    case 'number':
      return String(condition.value);
    case 'range':
      return `${condition.min},${condition.max}`;
    case 'text':
      return formatTextExpr(condition.expr);
  }
}

/** One condition as an fq parameter. */
export const formatCondition = (condition: Condition): string => `${condition.field}:${formatValue(condition)}`;

/** A filter as fq parameters, one per condition, in order. */
export const describeFilter = (filter: Filter): string[] => filter.conditions.map(formatCondition);
