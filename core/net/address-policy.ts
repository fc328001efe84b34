// Which network addresses the input downloader may connect to. Only public unicast addresses are
// reachable by default; an operator can open specific non-public targets (a local MinIO, a test
// server) with allow entries.
import { BlockList, isIP } from 'node:net';

export interface AddressPolicy {
  /** ip: the address about to be connected to; hostname: the URL's host (name or literal). */
  isAllowed(ip: string, port: number, hostname: string): boolean;
}

// IPv4 ranges that are not public unicast (IANA special-purpose address registry).
const NON_PUBLIC_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. broadcast 255.255.255.255
];

// Special ranges inside global unicast 2000::/3. Everything outside 2000::/3 (loopback, unspecified,
// unique-local fc00::/7, link-local fe80::/10, site-local, multicast ff00::/8, discard 100::/64,
// IPv4-compatible ::/96, SRv6 5f00::/16...) is refused without a list.
const NON_PUBLIC_V6_GLOBAL: Array<[string, number]> = [
  ['2001::', 23], // IETF protocol assignments, incl. Teredo 2001::/32 (embeds an obfuscated v4)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
];

const nonPublicV4 = toBlockList(NON_PUBLIC_V4, 'ipv4');
const nonPublicV6 = toBlockList(NON_PUBLIC_V6_GLOBAL, 'ipv6');

function toBlockList(ranges: Array<[string, number]>, family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

/** An address reduced to one spelling: IPv4-mapped IPv6 becomes plain IPv4, zone ids are dropped. */
interface NormalAddress {
  family: 4 | 6;
  /** dotted quad for v4; eight 4-digit hex groups for v6, so equal addresses compare equal. */
  text: string;
  /** v6 only: the eight 16-bit groups. */
  groups: number[];
}

function normalizeAddress(raw: string): NormalAddress | null {
  let text = raw.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const family = isIP(text);
  if (family === 4) return { family: 4, text, groups: [] };
  if (family !== 6) return null;
  const groups = ipv6Groups(text);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    // ::ffff:a.b.c.d is the IPv4 host itself: judge it (and match allow entries) as IPv4.
    return { family: 4, text: embeddedV4(groups[6], groups[7]), groups: [] };
  }
  return { family: 6, text: groups.map((g) => g.toString(16).padStart(4, '0')).join(':'), groups };
}

/** The eight 16-bit groups of an IPv6 address already validated by net.isIP. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const gap = text.indexOf('::');
  if (gap === -1) return parse(text);
  const head = parse(text.slice(0, gap));
  const rest = parse(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
}

function embeddedV4(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

function isPublicV4(address: string): boolean {
  return !nonPublicV4.check(address, 'ipv4');
}

function isPublicUnicast(address: NormalAddress): boolean {
  if (address.family === 4) return isPublicV4(address.text);
  const g = address.groups;
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return isPublicV4(embeddedV4(g[6], g[7]));
  }
  if (g[0] === 0x2002) return isPublicV4(embeddedV4(g[1], g[2]));
  if ((g[0] & 0xe000) !== 0x2000) return false;
  return !nonPublicV6.check(address.text, 'ipv6');
}

function normalizeHostname(hostname: string): string {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  return host;
}

/** A 'host:port' allow entry; host is a lower-case name or a normalized address text. */
interface HostPortEntry {
  host: string;
  isAddress: boolean;
  port: number;
}

function parsePort(text: string, entry: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new Error(`allow entry "${entry}": bad port "${text}"`);
  return port;
}

function parseHostPort(entry: string): HostPortEntry {
  let host: string;
  let portText: string;
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']:');
    if (close === -1) throw new Error(`allow entry "${entry}": expected [ipv6]:port`);
    host = entry.slice(1, close);
    portText = entry.slice(close + 2);
    if (isIP(host) !== 6) throw new Error(`allow entry "${entry}": "${host}" is not an IPv6 address`);
  } else {
    const colon = entry.lastIndexOf(':');
    if (colon === -1) throw new Error(`allow entry "${entry}": expected host:port or a CIDR range`);
    host = entry.slice(0, colon);
    portText = entry.slice(colon + 1);
    if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.?$/i.test(host)) {
      throw new Error(`allow entry "${entry}": "${host}" is not a host name or IPv4 address`);
    }
  }
  const port = parsePort(portText, entry);
  const address = normalizeAddress(host);
  if (address) return { host: address.text, isAddress: true, port };
  return { host: normalizeHostname(host), isAddress: false, port };
}

/**
 * Allow entries: 'host:port' (a host name or IP literal, exact port; IPv6 as '[::1]:8080'), a CIDR
 * range for every port ('127.0.0.0/8', '::1/128'), or a bare IP literal (one address, every port).
 * A host-name entry allows whatever that name resolves to, on that port. Throws on a malformed entry.
 */
export function createAddressPolicy(allow: string[]): AddressPolicy {
  const allowedRanges = new BlockList();
  const hostPorts: HostPortEntry[] = [];
  for (const rawEntry of allow) {
    const entry = rawEntry.trim();
    const slash = entry.indexOf('/');
    if (slash !== -1) {
      const network = entry.slice(0, slash);
      const prefixText = entry.slice(slash + 1);
      const family = isIP(network);
      const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
      if (family === 0 || !(prefix >= 0 && prefix <= (family === 4 ? 32 : 128))) {
        throw new Error(`allow entry "${entry}": not a valid CIDR range`);
      }
      allowedRanges.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
    } else if (isIP(entry) !== 0) {
      allowedRanges.addAddress(entry, isIP(entry) === 4 ? 'ipv4' : 'ipv6');
    } else {
      hostPorts.push(parseHostPort(entry));
    }
  }

  return {
    isAllowed(ip: string, port: number, hostname: string): boolean {
      const address = normalizeAddress(ip);
      if (!address) return false;
      if (isPublicUnicast(address)) return true;
      if (allowedRanges.check(address.text, address.family === 4 ? 'ipv4' : 'ipv6')) return true;
      const host = normalizeHostname(hostname);
      return hostPorts.some((entry) => entry.port === port && (entry.isAddress ? entry.host === address.text : entry.host === host));
    },
  };
}
