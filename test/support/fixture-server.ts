import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import sharp from 'sharp';

/** The shared test images (never copied into the project). */
export const IMAGES_DIR = path.resolve(import.meta.dirname, '../../../shared/data/images');

/**
 * Serves the shared test images to the Worker as `im_url`s:
 * - `/images/<file>`: the file as it is;
 * - `/near-copy/<file>`: a near-duplicate (cropped to 85%, mirrored, re-encoded as JPEG at quality 70);
 * - `/slow/<file>`: the file, after a delay of two seconds;
 * - `/status/<code>`: an empty answer with that status;
 * - anything else: 404.
 */
export function startFixtureServer(port: number): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    void respond(request.url ?? '/')
      .then(({ status, type, body }) => {
        response.writeHead(status, { 'content-type': type, 'content-length': body.byteLength });
        response.end(body);
      })
      .catch(() => {
        response.writeHead(404).end();
      });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

type Answer = { status: number; type: string; body: Buffer };

async function respond(url: string): Promise<Answer> {
  const [, kind, name = ''] = url.split('/');
  if (kind === 'status') return { status: Number(name) || 500, type: 'text/plain', body: Buffer.alloc(0) };
  const file = path.join(IMAGES_DIR, path.basename(decodeURIComponent(name)));
  const original = await readFile(file);
  if (kind === 'slow') await new Promise((resolve) => setTimeout(resolve, 2000));
  if (kind === 'images' || kind === 'slow') return { status: 200, type: 'application/octet-stream', body: original };
  if (kind === 'near-copy') return { status: 200, type: 'image/jpeg', body: await nearCopy(original) };
  throw new Error('unknown fixture');
}

async function nearCopy(original: Buffer): Promise<Buffer> {
  const { width = 0, height = 0 } = await sharp(original).metadata();
  const crop = { left: Math.round(width * 0.08), top: Math.round(height * 0.05), width: Math.round(width * 0.85), height: Math.round(height * 0.85) };
  return sharp(original).flatten({ background: '#ffffff' }).extract(crop).flop().jpeg({ quality: 70 }).toBuffer();
}
