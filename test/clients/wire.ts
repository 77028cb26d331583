import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-server';

/**
 * Requests as the official SDKs put them on the wire, built byte for byte (method, path and query string, content
 * type, multipart part headers, headers), sent over a plain HTTP/1.1 connection, and their answers as the SDKs see
 * them: the status line, the raw header names (the Java and iOS SDKs look `X-Log-ID` up case-sensitively) and the
 * JSON body.
 */

export type WireAnswer = { status: number; rawHeaderNames: string[]; headers: http.IncomingHttpHeaders; body: Record<string, unknown> & { status: string; method: string; error: unknown[] } };

export function send(baseUrl: string, request: { method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: Buffer | string }): Promise<WireAnswer> {
  const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      `${baseUrl}${request.path}`,
      { method: request.method, headers: { ...request.headers, ...(body ? { 'content-length': String(body.byteLength) } : {}) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          // The HTTP libraries the SDKs use ask for gzip and undo it, as this does.
          const raw = Buffer.concat(chunks);
          const encoding = response.headers['content-encoding'];
          const text = (encoding === 'gzip' ? zlib.gunzipSync(raw) : encoding === 'deflate' ? zlib.inflateSync(raw) : raw).toString('utf8');
          try {
            resolve({
              status: response.statusCode ?? 0,
              rawHeaderNames: response.rawHeaders.filter((_, index) => index % 2 === 0),
              headers: response.headers,
              body: JSON.parse(text) as WireAnswer['body'],
            });
          } catch {
            reject(new Error(`${request.method} ${request.path}: HTTP ${response.statusCode}, not JSON: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

export type Part = { name: string; value: string | Buffer; filename?: string; headers: string[] };

/** A multipart/form-data body of these parts, each with exactly the header lines given after its disposition. */
export function multipart(parts: Part[], boundary = `----${randomBytes(12).toString('hex')}`): { body: Buffer; boundary: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`;
    const head = [`--${boundary}`, `Content-Disposition: form-data; name="${part.name}"${filename}`, ...part.headers, '', ''].join('\r\n');
    chunks.push(Buffer.from(head), typeof part.value === 'string' ? Buffer.from(part.value) : part.value, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), boundary };
}

export const imageFile = (file: string): Buffer => readFileSync(path.join(IMAGES_DIR, file));

export const basicHeader = (accessKey: string, secretKey: string): string => `Basic ${Buffer.from(`${accessKey}:${secretKey}`).toString('base64')}`;

/** Every answer of the API, failures included, is HTTP 200 with the envelope and the request id as `X-Log-ID`. */
export function assertEnvelope(answer: WireAnswer, method: string): void {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.method, method);
  assert.ok(Array.isArray(answer.body.error));
  assert.ok(answer.rawHeaderNames.includes('X-Log-ID'), `X-Log-ID, exactly so spelled, among ${answer.rawHeaderNames.join(', ')}`);
}

/** An `OK` answer of a search, with its results. */
export function assertFound(answer: WireAnswer, method: string): { im_name: string; score?: number; value_map?: Record<string, string> }[] {
  assertEnvelope(answer, method);
  assert.equal(answer.body.status, 'OK', JSON.stringify(answer.body));
  assert.deepEqual(answer.body.error, []);
  return answer.body.result as { im_name: string; score?: number; value_map?: Record<string, string> }[];
}

/** A failed search as every SDK reads it: the message first in `error`, and page, limit, total and result there. */
export function assertSearchFailure(answer: WireAnswer, method: string, message: string): void {
  assertEnvelope(answer, method);
  assert.equal(answer.body.status, 'fail');
  assert.deepEqual(answer.body.error, [message]);
  assert.equal(answer.body.total, 0);
  assert.deepEqual(answer.body.result, []);
  assert.ok(Number.isInteger(answer.body.page) && Number.isInteger(answer.body.limit), JSON.stringify(answer.body));
}
