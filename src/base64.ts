/** Bytes as base64 text (RFC 4648 with padding), and back: atob and btoa speak strings of byte-valued characters. */
export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export const base64ToBytes = (text: string): Uint8Array => Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
