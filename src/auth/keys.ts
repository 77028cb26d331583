/** Application keys: random, hex-encoded, and stored only as SHA-256 digests where they are secrets. */

const toHex = (bytes: Uint8Array): string => [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');

export const randomKey = (bytes: number): string => toHex(crypto.getRandomValues(new Uint8Array(bytes)));

/** Keys are 128+ bits of randomness, so a plain digest is enough; a slow KDF would only slow every request. */
export const hashKey = async (key: string): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))));

/** Compares two digests without leaking where they differ. */
export const digestsEqual = (a: string, b: string): boolean => {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
};
