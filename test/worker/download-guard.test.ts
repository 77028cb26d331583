import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DownloadError,
  downloadImage,
  MAX_REDIRECTS,
  type DownloadFailure,
  type DownloadOptions,
} from '../../src/download/download';
import { checkUrl, specialRange, UrlRefused, type UrlPolicy } from '../../src/download/url-guard';
import { createApp, fixtureUrl, hits, insert, insertAndWait, uploadsearch, waitForTransaction } from './helpers';

const IMAGE = 'animals_birds_hen.png';
const PORT = new URL(env.FIXTURES_URL).port;

/** What a deploy environment gives (wrangler.toml): loopback refused, names resolved (here by the fixture server). */
const DEPLOYED: DownloadOptions = {
  timeoutMs: 5000,
  maxBytes: 1 << 20,
  allowLoopback: false,
  resolver: fixtureUrl('/dns-query'),
};
/** What local development and the tests give. */
const LOCAL: DownloadOptions = { ...DEPLOYED, allowLoopback: true, resolver: undefined };

/** An image path on the fixture server, unique to one case so its hit count is its own. */
const imagePath = (tag: string): string => `/images/${IMAGE}/${tag}`;
const redirectTo = (target: string, kind = 'redirect'): string => fixtureUrl(`/${kind}/${encodeURIComponent(target)}`);

/** Downloads the URL and says that it got the image. */
async function expectImage(url: string, options: DownloadOptions): Promise<void> {
  expect((await downloadImage(url, options)).byteLength).toBeGreaterThan(1000);
}

/** Downloads the URL and says that it failed for that reason, with a message naming why. */
async function expectFailure(url: string, options: DownloadOptions, reason: DownloadFailure, why = ''): Promise<void> {
  const error = await downloadImage(url, options).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(DownloadError);
  expect(error).toMatchObject({ reason, message: expect.stringContaining(why) });
}

const verdict = async (url: string, policy: UrlPolicy): Promise<string> =>
  checkUrl(new URL(url), policy, AbortSignal.timeout(5000)).then(
    () => 'allowed',
    // An unsupported scheme is a kind of refusal (download.ts tells it apart as an invalid URL).
    (error: unknown) => (error instanceof UrlRefused ? 'UrlRefused' : (error as Error).name),
  );

describe('address rules', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'IETF protocol assignments'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'IETF protocol assignments'], // Teredo
    ['100::1', 'discard-only'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['4000::1', 'reserved'],
    ['1::', 'reserved'],
    ['::ffff:10.0.0.1', 'private (IPv4-mapped)'],
    ['::ffff:a00:1', 'private (IPv4-mapped)'],
    ['[::ffff:7f00:1]', 'loopback (IPv4-mapped)'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local (IPv4-mapped)'],
    ['::ffff:0.0.0.0', 'this network (IPv4-mapped)'],
    ['::ffff:0:192.168.0.1', 'private (IPv4-translated)'],
    ['64:ff9b::169.254.169.254', 'link-local (NAT64)'],
    ['64:ff9b::a00:1', 'private (NAT64)'],
    ['2002:a9fe:a9fe::1', 'link-local (6to4)'],
    ['2002:c0a8:101::', 'private (6to4)'],
    ['::10.0.0.1', 'private (IPv4-compatible)'],
    ['example.com', 'invalid'],
    ['1.2.3', 'invalid'],
    ['01.2.3.4', 'invalid'],
    ['1.2.3.256', 'invalid'],
    ['::ffff:1.2.3.256', 'invalid'],
    ['1:2:3:4:5:6:7:8:9', 'invalid'],
    ['1::2::3', 'invalid'],
    ['fe80::1%eth0', 'invalid'],
    ['', 'invalid'],
  ])('%s is %s', (address, range) => {
    expect(specialRange(address)).toBe(range);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '11.0.0.1',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.1',
    '192.169.0.1',
    '198.20.0.1',
    '223.255.255.255',
    '2606:4700::1111',
    '2a00:1450:4001:82a::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(specialRange(address)).toBeNull();
  });

  const REFUSED_ALWAYS = [
    'file:///etc/passwd',
    'ftp://example.com/a.jpg',
    'data:image/png;base64,iVBORw0KGgo=',
    'gopher://example.com/',
    'javascript:alert(1)',
    'http://user:pass@example.com/a.jpg',
    'http://user@example.com/a.jpg',
    'http://169.254.169.254/latest/meta-data',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://metadata.google.internal./',
    'http://db.internal/',
    'http://printer.local/',
    'http://router.home.arpa/',
    'http://intranet/',
    'http://10.0.0.1/',
    'https://10.0.0.1:8443/a.jpg',
    'http://012.0.0.1/',
    'http://[::ffff:10.0.0.1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://[2002:a9fe:a9fe::]/',
    'http://0.0.0.0/',
    'http://0/',
    'http://[::]/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://100.64.0.1/',
    'http://255.255.255.255/',
    'http://224.0.0.1/',
    'http://192.0.2.1/',
    'http://198.18.0.1/',
  ];
  const LOOPBACK_SPELLINGS = [
    'http://127.0.0.1/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://0x7f000001/',
    'http://127.0.0.1./',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'http://localhost/',
    'http://LOCALHOST./',
    'http://img.localhost/',
  ];
  const PUBLIC = [
    'https://example.com/a.jpg',
    'http://93.184.215.14/a.jpg',
    'http://[2606:4700::1111]:8080/',
    'http://8.8.8.8/',
  ];
  const noLookup = (allowLoopback: boolean): UrlPolicy => ({ allowLoopback, resolver: undefined });

  it.each(REFUSED_ALWAYS)('refuses %s, loopback allowed or not', async (url) => {
    expect(await verdict(url, noLookup(false))).toBe('UrlRefused');
    expect(await verdict(url, noLookup(true))).toBe('UrlRefused');
  });

  it.each(LOOPBACK_SPELLINGS)('refuses %s unless loopback is allowed', async (url) => {
    expect(await verdict(url, noLookup(false))).toBe('UrlRefused');
    expect(await verdict(url, noLookup(true))).toBe('allowed');
  });

  it.each(PUBLIC)('allows %s', async (url) => {
    expect(await verdict(url, noLookup(false))).toBe('allowed');
  });
});

describe('downloadImage with the settings of a deploy environment', () => {
  it.each([
    ['127.0.0.1', `http://127.0.0.1:${PORT}`],
    ['a decimal IPv4', `http://2130706433:${PORT}`],
    ['a hex IPv4', `http://0x7f.1:${PORT}`],
    ['a short IPv4', `http://127.1:${PORT}`],
    ['an IPv4-mapped IPv6', `http://[::ffff:127.0.0.1]:${PORT}`],
    ['localhost', `http://localhost:${PORT}`],
  ])('refuses loopback spelt as %s without fetching it, and fetches it where loopback is allowed', async (_, host) => {
    const path = imagePath(`loopback-${host}`);
    await expectFailure(`${host}${path}`, DEPLOYED, 'refused', 'loopback');
    expect(await hits(path)).toBe(0);
    // The same URL reaches the fixture server when allowed: the refusal above is what kept it from being fetched.
    await expectImage(`${host}${path}`, LOCAL);
    expect(await hits(path)).toBe(1);
  });

  it('refuses a name that resolves to a private address, or to any refused address among public ones', async () => {
    const lookups = await hits('/dns-query');
    await expectFailure(`http://img.private.test:${PORT}${imagePath('private-name')}`, DEPLOYED, 'refused', '10.1.2.3');
    await expectFailure(`http://img.mixed.test:${PORT}${imagePath('mixed-name')}`, DEPLOYED, 'refused', 'fd12:3456::1');
    expect(await hits('/dns-query')).toBe(lookups + 4); // A and AAAA for each name
  });

  it('lets a name through when every address it resolves to is public', async () => {
    expect(await verdict('https://img.public.test/a.jpg', DEPLOYED)).toBe('allowed');
  });

  it('fails the download when the name does not resolve, or the resolver fails', async () => {
    await expectFailure('https://nowhere.test/a.jpg', DEPLOYED, 'unreachable', 'status 3');
    const resolverDown = { ...DEPLOYED, resolver: fixtureUrl('/status/503') };
    await expectFailure('https://img.public.test/a.jpg', resolverDown, 'unreachable', 'HTTP 503');
  });

  it('looks up neither IP literals nor names refused by their form', async () => {
    const lookups = await hits('/dns-query');
    await expectImage(fixtureUrl(imagePath('literal')), { ...DEPLOYED, allowLoopback: true });
    await expectFailure('http://metadata.google.internal/computeMetadata/v1/', DEPLOYED, 'refused', 'local name');
    expect(await hits('/dns-query')).toBe(lookups);
  });
});

describe('downloadImage redirects', () => {
  const nest = (target: string, hops: number): string => (hops === 0 ? target : nest(redirectTo(target), hops - 1));

  it('follows relative and absolute redirects, checking each hop', async () => {
    const relative = imagePath('relative-target');
    await expectImage(redirectTo(relative), LOCAL);
    expect(await hits(relative)).toBe(1);
    const refusedTarget = imagePath('redirect-refused-target');
    await expectFailure(redirectTo(`http://0.0.0.0:${PORT}${refusedTarget}`), LOCAL, 'refused', 'this network');
    expect(await hits(refusedTarget)).toBe(0);
  });

  it('tells a URL that is none from a redirect to one: invalid, then unreachable', async () => {
    await expectFailure('ftp://127.0.0.1/a.jpg', LOCAL, 'invalid_url', 'scheme ftp:');
    await expectFailure('not a url', LOCAL, 'invalid_url', 'not a URL');
    await expectFailure(redirectTo('ftp://127.0.0.1/a.jpg'), LOCAL, 'unreachable', 'scheme ftp:');
  });

  it(`follows at most ${MAX_REDIRECTS} redirects`, async () => {
    const target = imagePath('hops');
    await expectImage(nest(fixtureUrl(target), MAX_REDIRECTS), LOCAL);
    expect(await hits(target)).toBe(1);
    await expectFailure(nest(fixtureUrl(target), MAX_REDIRECTS + 1), LOCAL, 'unreachable', 'redirects');
    expect(await hits(target)).toBe(1);
  });

  it('holds one timeout over all hops together', async () => {
    const options = { ...LOCAL, timeoutMs: 3000 };
    // Each hop takes two seconds: one fits in the timeout, two do not.
    await expectImage(redirectTo(imagePath('one-slow-hop'), 'slow-redirect'), options);
    await expectFailure(redirectTo(`/slow/${IMAGE}`, 'slow-redirect'), options, 'timeout');
  });
});

describe('refused image URLs through the Worker (loopback allowed, as in local development)', () => {
  const byName = (a: { im_name: string }, b: { im_name: string }): number => a.im_name.localeCompare(b.im_name);
  /** Name, URL, and the fixture path the URL would reach if it were fetched. */
  const refused: [string, string, string | null][] = [
    ['file', 'file:///etc/passwd', null],
    ['metadata', 'http://169.254.169.254/latest/meta-data', null],
    ['mapped-private', 'http://[::ffff:10.0.0.1]/', null],
    ['redirect-metadata', redirectTo('http://169.254.169.254/latest/meta-data'), null],
    // These would reach the fixture server if fetched (Linux routes 0.0.0.0 to this machine).
    ['this-network', `http://0.0.0.0:${PORT}${imagePath('e2e-zero')}`, imagePath('e2e-zero')],
    ['mapped-this-network', `http://[::ffff:0.0.0.0]:${PORT}${imagePath('e2e-mapped')}`, imagePath('e2e-mapped')],
    ['credentials', `http://user:secret@127.0.0.1:${PORT}${imagePath('e2e-user')}`, imagePath('e2e-user')],
    ['redirect-private', redirectTo(`http://0.0.0.0:${PORT}${imagePath('e2e-target')}`), imagePath('e2e-target')],
  ];

  it('fails each refused item with 201 without fetching it, and still downloads a loopback fixture', async () => {
    const app = await createApp('ssrf');
    const allowed = imagePath('e2e-allowed');
    const items = [
      ...refused.map(([name, url]) => ({ im_name: name, im_url: url })),
      { im_name: 'fixture', im_url: fixtureUrl(allowed) },
    ];
    const { trans_id } = await (await insert(app, items)).json<{ trans_id: number }>();
    const status = await waitForTransaction(app, trans_id);
    expect(status).toMatchObject({ processed_percent: 100, success_count: 1, fail_count: refused.length });
    const message = 'Could not download the image from im_url.';
    const failed = refused.map(([name]) => ({ im_name: name, error_code: 201, error_message: message }));
    expect(status.error_list.toSorted(byName)).toEqual(failed.toSorted(byName));
    for (const [, , target] of refused) if (target) expect(await hits(target), target).toBe(0);
    expect(await hits(allowed)).toBe(1);
  });

  it('refuses them as the query image of /uploadsearch too', async () => {
    const app = await createApp('ssrf-upload');
    await insertAndWait(app, [{ im_name: 'catalog', im_url: fixtureUrl(`/images/${IMAGE}`) }]);
    const target = imagePath('upload-zero');
    const { status, body } = await uploadsearch(app, { im_url: redirectTo(`http://0.0.0.0:${PORT}${target}`) });
    expect(status).toBe(200);
    expect(body).toMatchObject({ status: 'fail', error: ['Could not download the image, please try again later.'], total: 0, result: [] });
    expect(await hits(target)).toBe(0);
  });
});
