/** Application keys: random, hex-encoded, and stored only as SHA-256 digests where they are secrets. */
import type { NewApp } from '../storage/apps';

export type AppCredentials = { app_id: string; access_key: string; secret_key: string; app_key: string };

const toHex = (bytes: Uint8Array): string => [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');

const randomKey = (bytes: number): string => toHex(crypto.getRandomValues(new Uint8Array(bytes)));

/** Keys are 128+ bits of randomness, so a plain digest is enough; a slow KDF would only slow every request. */
export const hashKey = async (key: string): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key))));

/** A new application's keys, answered once, and the digests that are stored of its secret key and app key. */
export async function newAppKeys(name: string): Promise<{ credentials: AppCredentials; stored: NewApp }> {
  const credentials: AppCredentials = {
    app_id: `app_${randomKey(8)}`,
    access_key: randomKey(16),
    secret_key: randomKey(32),
    app_key: randomKey(16),
  };
  const stored: NewApp = {
    id: credentials.app_id,
    name,
    accessKey: credentials.access_key,
    secretKeyHash: await hashKey(credentials.secret_key),
    appKeyHash: await hashKey(credentials.app_key),
  };
  return { credentials, stored };
}

/** Compares two digests without leaking where they differ. */
export const digestsEqual = (a: string, b: string): boolean => {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
};
