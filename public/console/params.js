/** The advanced parameters of spec 4.8, read from the form the search modes share. */

/** Spec 4.4 and 4.7: `detection` is not supported by /search and /colorsearch. */
const IMAGE_SEARCH_ONLY = new Set(['detection']);

/** [name, value] pairs of the filled fields: fq repeated per line, fl per field; checked boxes send `true`. */
export function advancedParams(form, { imageSearch }) {
  const pairs = [];
  for (const [name, raw] of new FormData(form)) {
    const value = String(raw).trim();
    if (value === '' || (IMAGE_SEARCH_ONLY.has(name) && !imageSearch)) continue;
    const values = name === 'fq' ? value.split('\n') : name === 'fl' ? value.split(/[\s,]+/) : [value];
    pairs.push(...values.map((entry) => entry.trim()).filter(Boolean).map((entry) => [name, entry]));
  }
  return pairs;
}

/** An fq line matching one string value exactly: always quoted, so any value is safe (spec 4.9). */
export const exactFilter = (field, value) => `${field}:"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;

/** Adds an fq line to the form, once. */
export function addFilter(form, line) {
  const lines = form.elements.fq.value.split('\n').map((entry) => entry.trim()).filter(Boolean);
  if (!lines.includes(line)) form.elements.fq.value = [...lines, line].join('\n');
}
