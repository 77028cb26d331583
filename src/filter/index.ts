/** The fq filter language (docs/api.md, The filter language): parsing, matching, pushing down to Vectorize, canonical form. */
export { FilterError } from './errors';
export { describeFilter, formatCondition, formatTextExpr } from './format';
export { matches, matchesCondition, parseFilters } from './filter';
export { parseCondition, splitFq, type FqParts } from './parser';
export { isFullyPushedDown, pushDown, toVectorFilter, type IndexFilter, type PushDown } from './pushdown';
export { delimiterCodePoints, isDelimiter, isDelimiterCodePoint, tokenize } from './tokens';
export {
  MAX_FQ_LENGTH,
  MAX_PAREN_DEPTH,
  type Condition,
  type DefaultOperator,
  type Filter,
  type FilterOptions,
  type NumericType,
  type TextExpr,
} from './types';
