/** The keys the console calls the API with, kept in this browser's localStorage between visits. */

const STORAGE_KEY = 'image-search-console:keys';
const EMPTY = { accessKey: '', secretKey: '', appKey: '' };

export function loadKeys() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '{}');
    const value = (name) => (typeof saved[name] === 'string' ? saved[name] : '');
    return Object.fromEntries(Object.keys(EMPTY).map((name) => [name, value(name)]));
  } catch {
    return { ...EMPTY };
  }
}

export const saveKeys = (keys) => localStorage.setItem(STORAGE_KEY, JSON.stringify(keys));

export function forgetKeys() {
  localStorage.removeItem(STORAGE_KEY);
  return { ...EMPTY };
}

/** UTF-8 safe: btoa alone throws on anything outside Latin-1. */
const base64 = (text) => btoa(Array.from(new TextEncoder().encode(text), (byte) => String.fromCharCode(byte)).join(''));

/**
 * How calls authenticate: the key pair as HTTP Basic (search and insert), else the app key alone, sent as the
 * `access_key` parameter (search only, docs/decisions.md).
 */
export function authOf(keys) {
  if (keys.accessKey && keys.secretKey) {
    return { kind: 'basic', header: `Basic ${base64(`${keys.accessKey}:${keys.secretKey}`)}` };
  }
  if (keys.appKey) return { kind: 'app', appKey: keys.appKey };
  return { kind: 'none' };
}

export const describeAuth = (auth) =>
  ({
    basic: 'Using the access key and secret key: search and insert.',
    app: 'Using the app key: search only.',
    none: 'No keys yet: paste an access key and secret key, or an app key.',
  })[auth.kind];
