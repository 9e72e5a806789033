// Classifies IP addresses for the SSRF guard: which ones are not the public internet
// (loopback, private, link-local, CGNAT, unique-local, IPv4-mapped, cloud metadata, ...).
// Parsing and prefix matching are ipaddr.js's (embedded IPv4, zone ids, `::` compression); the
// table of what is refused is this guard's own policy, kept here in full so that a reader can
// check it and an upgrade of the library cannot change it.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type AddressCategory =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'carrier-grade NAT'
  | 'unique-local'
  | 'IPv4-mapped IPv6'
  | 'IPv4-translated IPv6'
  | 'cloud metadata'
  | 'multicast'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'invalid';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The first range an address falls in names its category; more specific ranges come first. */
function table(entries: Array<[string, AddressCategory]>): Array<[Range, AddressCategory]> {
  return entries.map(([cidr, category]) => [ipaddr.parseCIDR(cidr), category]);
}

const V4_RANGES = table([
  ['169.254.169.254/32', 'cloud metadata'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
]);

const V6_RANGES = table([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'IPv4-mapped IPv6'],
  // IPv4-compatible (deprecated) ::a.b.c.d carries an IPv4 address too.
  ['::/96', 'IPv4-mapped IPv6'],
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach an IPv4 address through a translator.
  ['64:ff9b::/96', 'IPv4-translated IPv6'],
  ['fd00:ec2::254/128', 'cloud metadata'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'reserved'],
  ['ff00::/8', 'multicast'],
  ['2001:db8::/32', 'documentation'],
  ['100::/64', 'reserved'],
  ['2002::/16', 'IPv4-translated IPv6'],
]);

/** The address, when it is one in standard notation (dotted-quad IPv4, IPv6 with an optional zone). */
function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  // isIP accepts only the standard forms, not "0x7f.1" or "127.1" (URLs are normalised before).
  if (isIP(address.split('%')[0] ?? '') === 0) return undefined;
  try {
    return ipaddr.parse(address);
  } catch {
    return undefined;
  }
}

/** What kind of address this is; anything but `public` is refused by default. */
export function classifyAddress(address: string): AddressCategory {
  const parsed = parse(address);
  if (!parsed) return 'invalid';
  for (const [range, category] of parsed.kind() === 'ipv4' ? V4_RANGES : V6_RANGES)
    if (range[0].kind() === parsed.kind() && parsed.match(range)) return category;
  return 'public';
}

/** Whether `address` lies in `cidr` (`10.0.0.0/8`, `fd00::/8`, or a single address). */
export function addressInCidr(address: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const parsed = parse(address);
  const network = parse(base ?? '');
  if (!parsed || !network || parsed.kind() !== network.kind()) return false;
  const width = parsed.kind() === 'ipv4' ? 32 : 128;
  const prefix = bits === undefined ? width : Number(bits);
  if (
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > width ||
    (bits !== undefined && !/^\d+$/.test(bits))
  )
    return false;
  return parsed.match(network, prefix);
}
