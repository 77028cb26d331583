import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MalformedForm, multipartBoundary, readMultipart, readUrlencoded, type FormReading, type FormValue } from '../../src/http/form-body';

/** A reading that admits everything and keeps files whole, unless told otherwise. */
const reading = (overrides: Partial<FormReading> = {}): FormReading => ({
  admit: () => undefined,
  maxTextBytes: Number.POSITIVE_INFINITY,
  textTooLong: (name) => new Error(`too long: ${name}`),
  isFile: () => false,
  maxFileBytes: Number.POSITIVE_INFINITY,
  ...overrides,
});

/** The bytes in chunks cut at `cuts` (offsets), as a network might deliver them. */
async function* chunked(bytes: Uint8Array, cuts: number[] = []): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    if (cut <= start || cut >= bytes.length) continue;
    yield bytes.slice(start, cut);
    start = cut;
  }
  yield bytes.slice(start);
}

type Entry = [string, string | { file: string; type: string; bytes: number[] }];

const plain = async (value: FormValue): Promise<Entry[1]> =>
  typeof value === 'string' ? value : { file: value.name, type: value.type, bytes: [...new Uint8Array(await value.arrayBuffer())] };

async function readAll(read: (add: (name: string, value: FormValue) => void) => Promise<void>): Promise<Entry[]> {
  const values: [string, FormValue][] = [];
  await read((name, value) => values.push([name, value]));
  return Promise.all(values.map(async ([name, value]) => [name, await plain(value)] as Entry));
}

/** A form as workerd serializes it, and the entries workerd's own parser reads back from those bytes. */
async function serialized(form: FormData): Promise<{ bytes: Uint8Array; type: string; expected: Entry[] }> {
  const request = new Request('http://form.test/', { method: 'POST', body: form });
  const bytes = new Uint8Array(await request.arrayBuffer());
  const type = request.headers.get('content-type')!;
  const parsed = await new Response(bytes, { headers: { 'content-type': type } }).formData();
  const expected = await Promise.all([...parsed].map(async ([name, value]) => [name, await plain(value)] as Entry));
  return { bytes, type, expected };
}

const text = (value: string): Uint8Array => new TextEncoder().encode(value);

// Names without `"`, CR or LF, which serializers escape each their own way.
const name = fc.stringMatching(/^[a-zA-Z0-9_\[\]=&;:. é漢🙂-]{1,12}$/);
const textValue = fc.string({ unit: 'binary', maxLength: 40 });
const fileValue = fc.record({
  name: fc.stringMatching(/^[a-zA-Z0-9_. -]{1,12}$/),
  type: fc.constantFrom('image/png', 'application/octet-stream', 'text/plain'),
  // Bytes that look like delimiters and line breaks, as images may hold.
  bytes: fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(13, 10, 45)), { maxLength: 300 }),
});

describe('readMultipart', () => {
  it('reads what workerd serializes as workerd reads it, however the body is cut into chunks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(name, fc.oneof(textValue, fileValue)), { maxLength: 8 }),
        fc.array(fc.nat({ max: 4000 }), { maxLength: 12 }),
        async (entries, cuts) => {
          const form = new FormData();
          for (const [key, value] of entries) {
            if (typeof value === 'string') form.append(key, value);
            else form.append(key, new File([new Uint8Array(value.bytes)], value.name, { type: value.type }));
          }
          const { bytes, type, expected } = await serialized(form);
          const boundary = multipartBoundary(type)!;
          expect(await readAll((add) => readMultipart(chunked(bytes, cuts), boundary, reading(), add))).toEqual(expected);
        },
      ),
      { seed: 42, numRuns: 200 },
    );
  });

  it('skips a preamble and an epilogue that comes in a later chunk', async () => {
    const body = text('preamble\r\n--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--');
    const epilogue = text('\r\nepilogue');
    async function* chunks(): AsyncGenerator<Uint8Array> {
      yield body;
      yield epilogue;
    }
    expect(await readAll((add) => readMultipart(chunks(), 'b', reading(), add))).toEqual([['a', '1']]);
  });

  it('reads a part named as a file parameter as a file, whatever its headers', async () => {
    const body = text('--b\r\nContent-Disposition: form-data; name="image[0]"\r\n\r\nPNG\r\n--b\r\nContent-Disposition: form-data; name="note"\r\n\r\nx\r\n--b--\r\n');
    const isFile = (key: string) => key === 'image[0]';
    expect(await readAll((add) => readMultipart(chunked(body), 'b', reading({ isFile }), add))).toEqual([
      ['image[0]', { file: '', type: 'application/octet-stream', bytes: [...text('PNG')] }],
      ['note', 'x'],
    ]);
  });

  it('keeps a file to one byte past its limit, drops the rest as it comes, and goes on with the next parts', async () => {
    const big = new Uint8Array(5000).fill(7);
    const form = new FormData();
    form.append('image[0]', new File([big], 'big.png', { type: 'image/png' }));
    form.append('image[1]', new File([big.subarray(0, 100)], 'small.png', { type: 'image/png' }));
    form.append('im_name[1]', 'small');
    const { bytes, type } = await serialized(form);
    const cuts = Array.from({ length: 40 }, (_, k) => k * 250);
    const entries = await readAll((add) => readMultipart(chunked(bytes, cuts), multipartBoundary(type)!, reading({ maxFileBytes: 1000 }), add));
    expect(entries.map(([key, value]) => [key, typeof value === 'string' ? value : value.bytes.length])).toEqual([
      ['image[0]', 1001],
      ['image[1]', 100],
      ['im_name[1]', 'small'],
    ]);
  });

  it('refuses a text part past maxTextBytes as it comes, and admits each name before its value', async () => {
    const admitted: string[] = [];
    const body = text(`--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name="note"\r\n\r\n${'y'.repeat(200)}\r\n--b--\r\n`);
    const read = readMultipart(chunked(body, [60, 120]), 'b', reading({ admit: (key) => void admitted.push(key), maxTextBytes: 100 }), () => undefined);
    await expect(read).rejects.toThrow('too long: note');
    expect(admitted).toEqual(['a', 'note']);
  });

  it.each([
    ['no closing delimiter', '--b\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n'],
    ['no delimiter at all', 'just text'],
    ['a part without a name', '--b\r\nContent-Disposition: form-data\r\n\r\n1\r\n--b--\r\n'],
    ['a part without headers', '--b\r\n\r\n1\r\n--b--\r\n'],
    ['a part that is not form-data', '--b\r\nContent-Disposition: attachment; name="a"\r\n\r\n1\r\n--b--\r\n'],
    ['text after a delimiter', '--b junk\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--b--\r\n'],
  ])('refuses %s as malformed', async (_, body) => {
    await expect(readMultipart(chunked(text(body)), 'b', reading(), () => undefined)).rejects.toBeInstanceOf(MalformedForm);
  });

  it('reads the boundary of a content type, quoted or not, and nothing else', () => {
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/form-data; boundary="a b"; charset=utf-8')).toBe('a b');
    expect(multipartBoundary('multipart/form-data')).toBeUndefined();
    expect(multipartBoundary(`multipart/form-data; boundary=${'x'.repeat(71)}`)).toBeUndefined();
  });
});

describe('readUrlencoded', () => {
  const pair = fc.tuple(
    fc.oneof(name, fc.constantFrom('%ZZ', '%', '%e2%82', '+a+', '')),
    fc.oneof(textValue, fc.constantFrom('%ZZ', '%41%', 'a+b', '%E2%82%AC', '?x')),
  );

  it('reads pairs as the query string reads them, whatever the chunks cut (inside a character too)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(pair, { maxLength: 10 }), fc.array(fc.nat({ max: 400 }), { maxLength: 10 }), fc.boolean(), async (pairs, cuts, encode) => {
        const body = pairs.map(([key, value]) => (encode ? new URLSearchParams([[key, value]]).toString() : `${key}=${value}`)).join('&');
        const expected: Entry[] = [...new URLSearchParams(`&${body}`)];
        expect(await readAll((add) => readUrlencoded(chunked(text(body), cuts), reading(), add))).toEqual(expected);
      }),
      { seed: 7, numRuns: 200 },
    );
  });

  it('admits every pair, empty ones too, and stops at the first the reading refuses', async () => {
    let admitted = 0;
    let pulled = 0;
    async function* flood(): AsyncGenerator<Uint8Array> {
      for (let chunk = 0; chunk < 1000; chunk++) {
        pulled++;
        yield text('a&&'.repeat(1000));
      }
    }
    const admit = (): void => {
      if (++admitted > 3000) throw new Error('too many');
    };
    await expect(readUrlencoded(flood(), reading({ admit }), () => undefined)).rejects.toThrow('too many');
    expect(pulled).toBe(2);
  });

  it('refuses a pair past maxTextBytes by its name, before it ends', async () => {
    async function* endless(): AsyncGenerator<Uint8Array> {
      yield text('a=1&note%5B3%5D=');
      for (;;) yield text('y'.repeat(1000));
    }
    await expect(readUrlencoded(endless(), reading({ maxTextBytes: 5000 }), () => undefined)).rejects.toThrow('too long: note[3]');
  });
});
