/** The parsed form of `fq` parameters (docs/api.md, The filter language). */

/** A boolean expression over the tokens of a text field. */
export type TextExpr =
  /** Matches when every one of its tokens (at least one, lower-cased, delimiter-free) is among the field's tokens. */
  | { kind: 'term'; tokens: string[] }
  | { kind: 'not'; operand: TextExpr }
  /** At least two operands, none of them an `and`. */
  | { kind: 'and'; operands: TextExpr[] }
  /** At least two operands, none of them an `or`. */
  | { kind: 'or'; operands: TextExpr[] };

export type NumericType = 'int' | 'float';

/** The condition of one fq on one field. */
export type Condition =
  /** A string field equal (case-sensitively) to one of `values` (at least one, no duplicates). */
  | { kind: 'string'; field: string; values: string[] }
  /** An int or float field equal to `value`. */
  | { kind: 'number'; field: string; type: NumericType; value: number }
  /** An int or float field within `min..max`, both inclusive, `min <= max`. */
  | { kind: 'range'; field: string; type: NumericType; min: number; max: number }
  /** A text field whose tokens satisfy `expr`. */
  | { kind: 'text'; field: string; expr: TextExpr };

/**
 * Every fq of a request: an image matches when it matches all `conditions` (at most one per field, in the order the
 * fq parameters came). `ignoredFields` lists the fields named by fq parameters that are not in the schema.
 */
export type Filter = { conditions: Condition[]; ignoredFields: string[] };

export type DefaultOperator = 'AND' | 'OR';
export type FilterOptions = { textDefaultOperator: DefaultOperator };

/** The longest fq parameter accepted, in UTF-16 code units (JavaScript string length). */
export const MAX_FQ_LENGTH = 2000;
/** The deepest nesting of parentheses accepted in a text query. */
export const MAX_PAREN_DEPTH = 32;
