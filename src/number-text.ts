/**
 * Numbers as request text writes them, for parameters, metadata values and filters alike: an optional sign and
 * decimal digits; a decimal number may also have a fraction and an exponent (`1.5`, `.5`, `2e-3`, as Python's
 * `str(0.00001)` writes `1e-05`). Not hex, binary, `Infinity` or `NaN`, which `Number()` would take. The caller trims.
 */
export const INTEGER_TEXT = /^[+-]?\d+$/;
export const DECIMAL_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
