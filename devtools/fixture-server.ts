import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { IMAGES_DIR, PEOPLE_DIR } from './fixture-images.ts';
import { HOSTILE_SOURCE, hostileImages, rawPixels, type HostileImage } from './hostile-images.ts';
import { FORMAT_VARIANTS } from './image-formats.ts';
import { shapeCatalog } from './shape-catalog.ts';

export { IMAGES_DIR };

/**
 * Serves the test images (test/fixtures/images), and ways for a download to go wrong, to the Worker as `im_url`s:
 * - `/images/<file>`: the file as it is;
 * - `/near-copy/<file>`: a near-duplicate (cropped to 85%, mirrored, re-encoded as JPEG at quality 70);
 * - `/variants`: the format variants of `image-formats.ts` as JSON (name, extension, format, lossy);
 * - `/as-<variant>/<file>`: the file re-encoded as that variant (BMP, PNM, Sun raster, TIFF, ...);
 * - `/slow/<file>`: the file, after a delay of two seconds;
 * - `/slow-peak/<tag>`: the most `/slow/<file>/<tag>` requests that were open at once so far;
 * - `/truncated/<file>`: the first half of the file;
 * - `/palette/<hex>:<percent>,...`: a 300x200 PNG of vertical stripes of those colours, in those shares;
 * - `/png-header/<width>x<height>`: a PNG whose header declares that size and whose pixels are missing;
 * - `/hostile`: the hostile images of `hostile-images.ts`, made of HOSTILE_SOURCE, as JSON: `{source, images}`, each
 *   image described by all but its bytes (name, group, outcome, format, displayed size, content type, what it shows);
 * - `/hostile/<name>`: that hostile image, under its content type (a lie for the `lying` group);
 * - `/endless`: zeros, streamed without a length, until the client stops reading;
 * - `/hang`: headers never come;
 * - `/status/<code>`: an empty answer with that status;
 * - `/hits/<path>`: how many times `/<path>` (URL-encoded) was requested so far;
 * - `/redirect/<url>`: a 302 to that URL (URL-encoded, absolute or relative);
 * - `/slow-redirect/<url>`: the same, after a delay of two seconds;
 * - `/people/<file>`: a photo of people (test/fixtures/people);
 * - `/shapes/<seed>:<count>:<name>`: an image of shape-catalog.ts's catalog drawn with that seed and count per shape, as PNG;
 * - `/dns-query?name=<host>&type=A|AAAA`: a DNS-over-HTTPS JSON resolver of the zone in `DNS_ZONE`.
 * Any path may carry a further segment, which is ignored, so a URL can end in a lying extension.
 */
export function startFixtureServer(port: number): Promise<http.Server> {
  const hits = new Map<string, number>();
  const slowOpen = new Map<string, number>();
  const slowPeak = new Map<string, number>();
  const server = http.createServer((request, response) => {
    const requestPath = (request.url ?? '/').split('?')[0]!;
    hits.set(requestPath, (hits.get(requestPath) ?? 0) + 1);
    const [, kind = '', name = '', tag = ''] = requestPath.split('/');
    if (kind === 'hits') return void response.writeHead(200, { 'content-type': 'text/plain' }).end(String(hits.get(decodeURIComponent(name)) ?? 0));
    if (kind === 'slow-peak') return void response.writeHead(200, { 'content-type': 'text/plain' }).end(String(slowPeak.get(name) ?? 0));
    if (kind === 'slow') {
      const open = (slowOpen.get(tag) ?? 0) + 1;
      slowOpen.set(tag, open);
      slowPeak.set(tag, Math.max(open, slowPeak.get(tag) ?? 0));
      response.on('close', () => slowOpen.set(tag, slowOpen.get(tag)! - 1));
    }
    if (kind === 'hang') return; // the client's timeout ends it
    if (kind === 'endless') return streamZeros(response);
    if (kind === 'redirect') return redirect(response, decodeURIComponent(name), 0);
    if (kind === 'slow-redirect') return redirect(response, decodeURIComponent(name), 2000);
    if (kind === 'dns-query') return answerDns(new URL(request.url ?? '/', 'http://fixtures').searchParams, response);
    void respond(kind, decodeURIComponent(name))
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

const ok = (body: Buffer, type = 'application/octet-stream'): Answer => ({ status: 200, type, body });
const readImage = (name: string): Promise<Buffer> => readFile(path.join(IMAGES_DIR, path.basename(name)));

async function respond(kind: string, name: string): Promise<Answer> {
  switch (kind) {
    case 'status':
      return { status: Number(name) || 500, type: 'text/plain', body: Buffer.alloc(0) };
    case 'images':
      return ok(await readImage(name));
    case 'people':
      return ok(await readFile(path.join(PEOPLE_DIR, path.basename(name))));
    case 'shapes': {
      const [seed = '', count = '', image = ''] = name.split(':');
      const drawn = shapeCatalog(Number(count), Number(seed)).find((candidate) => candidate.name === image);
      if (!drawn) throw new Error(`unknown shape image ${name}`);
      return ok(await sharp(Buffer.from(drawn.svg)).png().toBuffer(), 'image/png');
    }
    case 'slow':
      await new Promise((resolve) => setTimeout(resolve, 2000));
      return ok(await readImage(name));
    case 'truncated': {
      const original = await readImage(name);
      return ok(original.subarray(0, original.byteLength >> 1));
    }
    case 'near-copy':
      return ok(await nearCopy(await readImage(name)), 'image/jpeg');
    case 'variants': {
      const list = FORMAT_VARIANTS.map(({ name: variant, extension, format, lossy }) => ({ name: variant, extension, format, lossy }));
      return ok(Buffer.from(JSON.stringify(list)), 'application/json');
    }
    case 'palette':
      return ok(await stripes(name), 'image/png');
    case 'png-header': {
      const [width = 0, height = 0] = name.split('x').map(Number);
      return ok(pngHeader(width, height), 'image/png');
    }
    case 'hostile': {
      const images = await hostileCatalogue();
      if (!name) {
        const described = images.map(({ bytes: _, ...rest }) => rest);
        return ok(Buffer.from(JSON.stringify({ source: HOSTILE_SOURCE, images: described })), 'application/json');
      }
      const image = images.find((candidate) => candidate.name === name);
      if (!image) throw new Error(`unknown hostile image ${name}`);
      return ok(Buffer.from(image.bytes), image.contentType);
    }
    default: {
      const variant = FORMAT_VARIANTS.find((candidate) => `as-${candidate.name}` === kind);
      if (!variant) throw new Error(`unknown fixture ${kind}`);
      const { data, info } = await sharp(await readImage(name)).raw().toBuffer({ resolveWithObject: true });
      return ok(Buffer.from(await variant.encode({ data, width: info.width, height: info.height, channels: info.channels as 3 | 4 })));
    }
  }
}

let hostile: Promise<HostileImage[]> | undefined;

/** Made once, on first use: seconds of work and half a gigabyte for the 40 MP files. */
function hostileCatalogue(): Promise<HostileImage[]> {
  hostile ??= readImage(HOSTILE_SOURCE).then(rawPixels).then(hostileImages);
  return hostile;
}

async function nearCopy(original: Buffer): Promise<Buffer> {
  const { width = 0, height = 0 } = await sharp(original).metadata();
  const crop = { left: Math.round(width * 0.08), top: Math.round(height * 0.05), width: Math.round(width * 0.85), height: Math.round(height * 0.85) };
  return sharp(original).flatten({ background: '#ffffff' }).extract(crop).flop().jpeg({ quality: 70 }).toBuffer();
}

async function stripes(spec: string): Promise<Buffer> {
  const width = 300;
  const height = 200;
  const pixels = Buffer.alloc(width * height * 3);
  let x = 0;
  for (const part of spec.split(',')) {
    const [hex = '000000', percent = '100'] = part.split(':');
    const end = Math.min(width, x + Math.round((width * Number(percent)) / 100));
    const rgb = [0, 2, 4].map((offset) => Number.parseInt(hex.slice(offset, offset + 2), 16));
    for (; x < end; x++) for (let y = 0; y < height; y++) pixels.set(rgb, (y * width + x) * 3);
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** A decompression bomb's shape: a valid signature and IHDR declaring any size, then no pixel data at all. */
function pngHeader(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.byteLength);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IEND', Buffer.alloc(0))]);
}

/** 64 KiB of zeros at a time, until the client hangs up or 200 MB have gone. */
function streamZeros(response: http.ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/octet-stream' });
  const chunk = Buffer.alloc(64 * 1024);
  let sent = 0;
  const pump = (): void => {
    while (sent < 200 * 1024 * 1024) {
      sent += chunk.byteLength;
      if (!response.write(chunk)) {
        response.once('drain', pump);
        return;
      }
    }
    response.end();
  };
  response.on('close', () => response.removeAllListeners('drain'));
  pump();
}

function redirect(response: http.ServerResponse, target: string, delayMs: number): void {
  setTimeout(() => response.writeHead(302, { location: target, 'content-length': 0 }).end(), delayMs);
}

/** Names under these suffixes resolve to these addresses; any other name does not exist (NXDOMAIN). */
const DNS_ZONE: Record<string, { A: string[]; AAAA: string[] }> = {
  'private.test': { A: ['10.1.2.3'], AAAA: [] },
  'public.test': { A: ['93.184.215.14'], AAAA: ['2606:4700::6810:84e5'] },
  'mixed.test': { A: ['93.184.215.14'], AAAA: ['fd12:3456::1'] },
};

function answerDns(query: URLSearchParams, response: http.ServerResponse): void {
  const name = query.get('name') ?? '';
  const type = query.get('type') === 'AAAA' ? 'AAAA' : 'A';
  const zone = Object.entries(DNS_ZONE).find(([suffix]) => name.endsWith(`.${suffix}`))?.[1];
  const answer = (zone?.[type] ?? []).map((data) => ({ name, type: type === 'A' ? 1 : 28, TTL: 60, data }));
  const body = JSON.stringify({ Status: zone ? 0 : 3, Answer: answer }); // 3: NXDOMAIN
  response.writeHead(200, { 'content-type': 'application/dns-json' }).end(body);
}
