/**
 * Which image URLs the Worker may fetch (SSRF guard): http and https only, no credentials, and no host that is, or
 * resolves to, an address outside the public internet (IANA special-purpose registries, RFC 6890 and successors).
 *
 * What remains: DNS rebinding. fetch() resolves the name again itself, so a hostile DNS server can answer a public
 * address to the lookup here and a private one to fetch() a moment later; a Worker cannot pin fetch() to the address
 * it checked. The lookup narrows that gap, it does not close it.
 */

export type UrlPolicy = {
  /** Loopback hosts (127/8, ::1, localhost) may be fetched: local development and tests only. */
  allowLoopback: boolean;
  /** DNS-over-HTTPS JSON endpoint that names are resolved with; undefined: names are not looked up. */
  resolver: string | undefined;
};

/** The URL may not be fetched. */
export class UrlRefused extends Error {
  override name = 'UrlRefused';
}

/** The URL is not http or https: no address could make it fetchable. */
export class UnsupportedScheme extends UrlRefused {
  override name = 'UnsupportedScheme';
}

/** The resolver could not say where a name points. */
export class LookupFailed extends Error {
  override name = 'LookupFailed';
}

type Range<T> = { base: T; bits: number; name: string };

const range = <T>(cidr: string, name: string, parse: (text: string) => T | null): Range<T> => {
  const [address = '', bits = ''] = cidr.split('/');
  return { base: parse(address)!, bits: Number(bits), name };
};

const LOOPBACK = 'loopback';

const IPV4_RANGES: Range<number>[] = (
  [
    ['0.0.0.0/8', 'this network'],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'shared (CGNAT)'],
    ['127.0.0.0/8', LOOPBACK],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'IETF protocol assignments'],
    ['192.0.2.0/24', 'documentation'],
    ['192.88.99.0/24', '6to4 relay anycast'],
    ['192.168.0.0/16', 'private'],
    ['198.18.0.0/15', 'benchmarking'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['240.0.0.0/4', 'reserved'], // 255.255.255.255 (broadcast) included
  ] as const
).map(([cidr, name]) => range(cidr, name, parseIPv4));

const IPV6_RANGES: Range<bigint>[] = (
  [
    ['::/128', 'unspecified'],
    ['::1/128', LOOPBACK],
    ['64:ff9b:1::/48', 'local-use NAT64'],
    ['100::/64', 'discard-only'],
    ['2001:db8::/32', 'documentation'],
    // Teredo (an obfuscated IPv4 inside), benchmarking, ORCHID: nothing an image is served from.
    ['2001::/23', 'IETF protocol assignments'],
    ['3fff::/20', 'documentation'],
    ['fc00::/7', 'unique local'],
    ['fe80::/10', 'link-local'],
    ['fec0::/10', 'site-local'],
    ['ff00::/8', 'multicast'],
  ] as const
).map(([cidr, name]) => range(cidr, name, parseIPv6));

/** IPv6 forms that carry an IPv4 address, judged by that address: where it sits (bit offset) in the 128 bits. */
const IPV4_EMBEDDINGS: (Range<bigint> & { shift: bigint })[] = (
  [
    ['::ffff:0:0/96', 'IPv4-mapped', 0n],
    ['::ffff:0:0:0/96', 'IPv4-translated', 0n],
    ['64:ff9b::/96', 'NAT64', 0n],
    ['2002::/16', '6to4', 80n],
    ['::/96', 'IPv4-compatible', 0n], // deprecated; :: and ::1 are matched before it
  ] as const
).map(([cidr, name, shift]) => ({ ...range(cidr, name, parseIPv6), shift }));

const inIPv4Range = (address: number, { base, bits }: Range<number>): boolean =>
  address >>> (32 - bits) === base >>> (32 - bits);

const inIPv6Range = (address: bigint, { base, bits }: Range<bigint>): boolean =>
  address >> BigInt(128 - bits) === base >> BigInt(128 - bits);

/** Dotted-quad IPv4 as an unsigned 32-bit number; null for anything else. */
function parseIPv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9]\d{0,2})$/.test(part) && Number(part) <= 255)) return null;
  return parts.reduce((sum, part) => sum * 256 + Number(part), 0);
}

/** IPv6 text (with `::` and an optional trailing dotted quad) as a 128-bit number; null for anything else. */
function parseIPv6(text: string): bigint | null {
  let hex = text;
  // A trailing dotted quad stands for the last two groups.
  const quad = /^(.*:)([^:]*\.[^:]*)$/.exec(text);
  if (quad) {
    const ipv4 = parseIPv4(quad[2]!);
    if (ipv4 === null) return null;
    hex = `${quad[1]}${(ipv4 >>> 16).toString(16)}:${(ipv4 & 0xffff).toString(16)}`;
  }
  const halves = hex.split('::').map((half) => (half === '' ? [] : half.split(':')));
  if (halves.length > 2) return null;
  const [head = [], tail] = halves;
  let groups = head;
  if (tail) {
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return null;
    groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  }
  if (groups.length !== 8 || !groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return null;
  return groups.reduce((sum, group) => (sum << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function ipv4Range(address: number): string | null {
  return IPV4_RANGES.find((range) => inIPv4Range(address, range))?.name ?? null;
}

function ipv6Range(address: bigint): string | null {
  const exact = IPV6_RANGES.find((range) => range.bits === 128 && inIPv6Range(address, range));
  if (exact) return exact.name;
  const embedding = IPV4_EMBEDDINGS.find((range) => inIPv6Range(address, range));
  if (embedding) {
    const embedded = ipv4Range(Number((address >> embedding.shift) & 0xffffffffn));
    return embedded && `${embedded} (${embedding.name})`;
  }
  const named = IPV6_RANGES.find((range) => inIPv6Range(address, range));
  if (named) return named.name;
  // Everything outside 2000::/3 is unassigned or special.
  return address >> 125n === 1n ? null : 'reserved';
}

/**
 * The special-purpose range an IP address (IPv4 dotted quad, or IPv6 text with or without brackets) lies in, e.g.
 * `private`, `loopback`, `link-local (IPv4-mapped)`; null for a public address, `invalid` for text that is no address.
 */
export function specialRange(address: string): string | null {
  const ipv4 = parseIPv4(address);
  if (ipv4 !== null) return ipv4Range(ipv4);
  const ipv6 = parseIPv6(address.replace(/^\[(.*)\]$/, '$1'));
  return ipv6 === null ? 'invalid' : ipv6Range(ipv6);
}

const isLoopback = (range: string): boolean => range === LOOPBACK || range.startsWith(`${LOOPBACK} (`);

/** Names that never point at the public internet, whatever a resolver says. */
function nameRange(name: string): string | null {
  if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
  // Cloud metadata (metadata.google.internal) and other internal, mDNS and home network names.
  if (/(^|\.)(internal|local|home\.arpa)$/.test(name)) return 'local name';
  if (!name.includes('.')) return 'single-label name';
  return null;
}

/** Refuses when the range is special, unless it is loopback and loopback is allowed. */
function refuseRange(range: string | null, what: string, policy: UrlPolicy): void {
  if (range !== null && !(policy.allowLoopback && isLoopback(range))) throw new UrlRefused(`${what} is ${range}`);
}

/** Throws UrlRefused if the URL may not be fetched, LookupFailed if its host could not be resolved. */
export async function checkUrl(url: URL, policy: UrlPolicy, signal: AbortSignal): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UnsupportedScheme(`scheme ${url.protocol} is not allowed`);
  }
  if (url.username || url.password) throw new UrlRefused('URLs with credentials are not allowed');
  // The URL parser has already turned every IPv4 spelling (2130706433, 0x7f.1, 127.1) into a dotted quad.
  const host = url.hostname.replace(/\.$/, '');
  if (host.startsWith('[') || parseIPv4(host) !== null) return refuseRange(specialRange(host), host, policy);

  const named = nameRange(host);
  refuseRange(named, host, policy);
  if (named !== null || policy.resolver === undefined) return;
  for (const address of await resolve(host, policy.resolver, signal)) {
    refuseRange(specialRange(address), `${host} (${address})`, policy);
  }
}

type DnsJson = { Status?: unknown; Answer?: { type?: unknown; data?: unknown }[] };
const RECORD_TYPES = { A: 1, AAAA: 28 } as const;

/** Every A and AAAA address of the name; CNAMEs are followed by the resolver, which lists their targets' records. */
async function resolve(name: string, resolver: string, signal: AbortSignal): Promise<string[]> {
  const answers = await Promise.all(
    (Object.keys(RECORD_TYPES) as (keyof typeof RECORD_TYPES)[]).map(async (type) => {
      const url = new URL(resolver);
      url.searchParams.set('name', name);
      url.searchParams.set('type', type);
      const response = await fetch(url, { headers: { accept: 'application/dns-json' }, signal });
      if (!response.ok) throw new LookupFailed(`resolver answered HTTP ${response.status} for ${name}`);
      let body: DnsJson;
      try {
        body = await response.json<DnsJson>();
      } catch {
        throw new LookupFailed(`resolver answered no JSON for ${name}`);
      }
      if (body.Status !== 0) throw new LookupFailed(`resolver answered status ${String(body.Status)} for ${name}`);
      const records = (body.Answer ?? []).filter((record) => record.type === RECORD_TYPES[type]);
      return records.map((record) => String(record.data));
    }),
  );
  const addresses = answers.flat();
  if (addresses.length === 0) throw new LookupFailed(`${name} has no address`);
  return addresses;
}
