// Classifies IP addresses for the SSRF guard: which ones are not the public internet
// (loopback, private, link-local, CGNAT, unique-local, IPv4-mapped, cloud metadata, ...).
import { isIP } from 'node:net';

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

function ipv4ToNumber(address: string): number | undefined {
  const parts = address.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

const V4_RANGES: Array<[string, number, AddressCategory]> = [
  ['169.254.169.254', 32, 'cloud metadata'],
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function classifyV4(address: string): AddressCategory {
  const value = ipv4ToNumber(address);
  if (value === undefined) return 'invalid';
  for (const [base, bits, category] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = ipv4ToNumber(base)!;
    if (value >= start && value < start + size) return category;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (embedded dotted IPv4 accepted). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const value = ipv4ToNumber(dotted[1]!);
    if (value === undefined) return undefined;
    text = `${text.slice(0, dotted.index)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail].map(
    (group) => (/^[0-9a-f]{1,4}$/.test(group) ? Number.parseInt(group, 16) : Number.NaN),
  );
  return groups.some(Number.isNaN) ? undefined : groups;
}

function classifyV6(address: string): AddressCategory {
  const groups = ipv6Groups(address);
  if (!groups) return 'invalid';
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const allZeroUntil = (count: number) => groups.slice(0, count).every((group) => group === 0);
  if (allZeroUntil(8)) return 'unspecified';
  if (allZeroUntil(7) && g7 === 1) return 'loopback';
  if (allZeroUntil(5) && g5 === 0xffff) return 'IPv4-mapped IPv6';
  // IPv4-compatible (deprecated) ::a.b.c.d and NAT64 64:ff9b::/96 carry an IPv4 address.
  if (allZeroUntil(6) && (g6 !== 0 || g7 > 1)) return 'IPv4-mapped IPv6';
  if (g0 === 0x64 && g1 === 0xff9b && allZeroUntil(0) && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0)
    return 'IPv4-translated IPv6';
  if (
    g0 === 0xfd00 &&
    g1 === 0x0ec2 &&
    g2 === 0 &&
    g3 === 0 &&
    g4 === 0 &&
    g5 === 0 &&
    g6 === 0 &&
    g7 === 0x254
  )
    return 'cloud metadata';
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'reserved';
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  if (g0 === 0x2001 && g1 === 0x0db8) return 'documentation';
  if (g0 === 0x0100 && g1 === 0 && g2 === 0 && g3 === 0) return 'reserved';
  if (g0 === 0x2002) return 'IPv4-translated IPv6';
  return 'public';
}

/** What kind of address this is; anything but `public` is refused by default. */
export function classifyAddress(address: string): AddressCategory {
  const version = isIP(address.split('%')[0]!);
  if (version === 4) return classifyV4(address);
  if (version === 6) return classifyV6(address);
  return 'invalid';
}

/** Whether `address` lies in `cidr` (`10.0.0.0/8`, `fd00::/8`, or a single address). */
export function addressInCidr(address: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const version = isIP(base!);
  if (version === 0 || version !== isIP(address)) return false;
  const bits = bitsText === undefined ? (version === 4 ? 32 : 128) : Number(bitsText);
  if (version === 4) {
    const size = 2 ** (32 - bits);
    const start = Math.floor(ipv4ToNumber(base!)! / size) * size;
    const value = ipv4ToNumber(address)!;
    return value >= start && value < start + size;
  }
  const a = ipv6Groups(address)!;
  const b = ipv6Groups(base!)!;
  let left = bits;
  for (let index = 0; index < 8 && left > 0; index++) {
    const take = Math.min(16, left);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((a[index]! & mask) !== (b[index]! & mask)) return false;
    left -= take;
  }
  return true;
}
