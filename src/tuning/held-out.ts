/**
 * Which labelled images a tuning holds out: never fitted, searched before and after to report what it gains
 * (docs/decisions.md, "Tuning on a label field"). Decided by the image's name alone (FNV-1a, one in HELD_OUT_EVERY),
 * so that a shop, or a test, can tell which they are and search them itself.
 */
export const HELD_OUT_EVERY = 5;

export function isHeldOut(imName: string): boolean {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(imName)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % HELD_OUT_EVERY === 0;
}
