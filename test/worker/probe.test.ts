import { describe, expect, it } from 'vitest';
import { hasSupportedDimensions, probeImage } from '../../src/images/probe';
import { fixtureUrl } from './helpers';

const bytes = (...parts: (number[] | string)[]): Uint8Array =>
  new Uint8Array(parts.flatMap((part) => (typeof part === 'string' ? [...part].map((char) => char.charCodeAt(0)) : part)));
const u16le = (n: number): number[] => [n & 0xff, n >> 8];
const u32le = (n: number): number[] => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
const u32be = (n: number): number[] => u32le(n).reverse();
const pad = (n: number): number[] => new Array<number>(n).fill(0);

describe('probeImage reads format and size from headers', () => {
  it('reads real PNG and JPEG files', async () => {
    const png = new Uint8Array(await (await fetch(fixtureUrl('/images/animals_birds_hen.png'))).arrayBuffer());
    const jpeg = new Uint8Array(await (await fetch(fixtureUrl('/images/opencv-doc_aero1.jpg'))).arrayBuffer());
    expect(probeImage(png)).toMatchObject({ format: 'png' });
    expect(probeImage(jpeg)).toEqual({ format: 'jpeg', width: 640, height: 480 });
  });

  it.each([
    ['gif', bytes('GIF89a', u16le(300), u16le(200), pad(8)), { width: 300, height: 200 }],
    ['bmp', bytes('BM', pad(12), u32le(40), u32le(640), u32le(-480 >>> 0), pad(8)), { width: 640, height: 480 }],
    ['bmp', bytes('BM', pad(12), u32le(12), u16le(120), u16le(90), pad(8)), { width: 120, height: 90 }],
    ['pnm', bytes('P6\n# a comment\n1024 768\n255\n', pad(4)), { width: 1024, height: 768 }],
    ['pnm', bytes('P1 150\n100 ', pad(10)), { width: 150, height: 100 }],
    ['sunraster', bytes([0x59, 0xa6, 0x6a, 0x95], u32be(500), u32be(400), pad(20)), { width: 500, height: 400 }],
    ['webp', bytes('RIFF', pad(4), 'WEBPVP8X', pad(8), [0xff, 0x03, 0x00], [0xc7, 0x02, 0x00]), { width: 1024, height: 712 }],
    ['tiff', bytes('II*\0', u32le(8), u16le(2), u16le(256), u16le(3), u32le(1), u16le(700), pad(2), u16le(257), u16le(4), u32le(1), u32le(300), pad(4)), { width: 700, height: 300 }],
  ] as const)('%s', (format, header, size) => {
    expect(probeImage(header)).toEqual({ format, ...size });
  });

  it('answers null for bytes that are no supported image, whatever they claim', () => {
    expect(probeImage(bytes('{"file": "x.jpg"}'))).toBeNull();
    expect(probeImage(bytes([0xff, 0xd8, 0xff], pad(3)))).toBeNull();
  });

  it('applies the spec dimension rule: 100 px in one direction, at most 40 MP', () => {
    const info = (width: number, height: number) => ({ format: 'png' as const, width, height });
    expect(hasSupportedDimensions(info(99, 99))).toBe(false);
    expect(hasSupportedDimensions(info(100, 20))).toBe(true);
    expect(hasSupportedDimensions(info(8000, 5000))).toBe(true);
    expect(hasSupportedDimensions(info(8000, 5001))).toBe(false);
  });
});
