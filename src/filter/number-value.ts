import { DECIMAL_TEXT, INTEGER_TEXT } from '../number-text';
import { FilterError, excerpt } from './errors';
import type { Condition, NumericType } from './types';

/**
 * The value of an fq on an int or float field: an exact value (`price:10`) or an inclusive range `min,max` with the
 * smaller value first (`price:10,20`; `10,10` is allowed). White space around each number is ignored; open ranges
 * and other forms are not part of the syntax. int: optional sign and decimal digits only, a safe integer
 * (|n| <= 2^53 - 1, as at insert). float: optional sign, decimal digits with an optional fraction and exponent
 * (`1.5`, `.5`, `2e-3`), finite. -0 reads as 0.
 */

function parseNumber(field: string, type: NumericType, text: string): number {
  const trimmed = text.trim();
  if (type === 'int') {
    if (!INTEGER_TEXT.test(trimmed)) throw new FilterError(field, `${excerpt(trimmed)} is not an integer`);
    const value = Number(trimmed);
    if (!Number.isSafeInteger(value)) {
      throw new FilterError(field, `${excerpt(trimmed)} is outside the integer range -(2^53 - 1) to 2^53 - 1`);
    }
    return value === 0 ? 0 : value;
  }
  if (!DECIMAL_TEXT.test(trimmed)) throw new FilterError(field, `${excerpt(trimmed)} is not a number`);
  const value = Number(trimmed);
  if (!Number.isFinite(value)) throw new FilterError(field, `${excerpt(trimmed)} is not a finite number`);
  return value === 0 ? 0 : value;
}

export function parseNumberValue(field: string, type: NumericType, text: string): Condition {
  if (text.trim() === '') throw new FilterError(field, 'value is empty');
  const parts = text.split(',');
  if (parts.length === 1) return { kind: 'number', field, type, value: parseNumber(field, type, text) };
  const [low, high] = parts;
  if (parts.length !== 2 || low === undefined || high === undefined || low.trim() === '' || high.trim() === '') {
    throw new FilterError(field, 'range must be min,max');
  }
  const min = parseNumber(field, type, low);
  const max = parseNumber(field, type, high);
  if (min > max) throw new FilterError(field, 'range must be min,max with min <= max');
  return { kind: 'range', field, type, min, max };
}
