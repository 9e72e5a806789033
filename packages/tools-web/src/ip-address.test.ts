import { describe, expect, it } from 'vitest';
import { addressInCidr, classifyAddress } from './ip-address.js';

describe('classifyAddress', () => {
  it.each([
    // IPv4: each range at its first and last address, and its neighbours outside.
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['1.0.0.0', 'public'],
    ['9.255.255.255', 'public'],
    ['10.0.0.0', 'private'],
    ['10.255.255.255', 'private'],
    ['11.0.0.0', 'public'],
    ['100.63.255.255', 'public'],
    ['100.64.0.0', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.128.0.0', 'public'],
    ['127.0.0.0', 'loopback'],
    ['127.255.255.255', 'loopback'],
    ['169.254.0.0', 'link-local'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.169.255', 'link-local'],
    ['172.15.255.255', 'public'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', 'public'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.77', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.255.255', 'private'],
    ['198.17.255.255', 'public'],
    ['198.18.0.0', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.9', 'documentation'],
    ['203.0.113.200', 'documentation'],
    ['223.255.255.255', 'public'],
    ['224.0.0.0', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.0', 'reserved'],
    ['255.255.255.255', 'reserved'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::2', 'IPv4-mapped IPv6'],
    ['::7f00:1', 'IPv4-mapped IPv6'],
    ['::ffff:10.0.0.1', 'IPv4-mapped IPv6'],
    ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped IPv6'],
    ['::1:0:0:1', 'public'],
    ['64:ff9b::8.8.8.8', 'IPv4-translated IPv6'],
    ['64:ff9b:1::1', 'public'],
    ['2002:a00:1::1', 'IPv4-translated IPv6'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['fd00:ec2::253', 'unique-local'],
    ['fc00::', 'unique-local'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['FEBF::1', 'link-local'],
    ['fec0::1', 'reserved'],
    ['ff02::1', 'multicast'],
    ['2001:db8:ffff::1', 'documentation'],
    ['2001:db9::1', 'public'],
    ['100::1', 'reserved'],
    ['100:0:0:1::1', 'public'],
    ['2606:4700::1111', 'public'],
    // Not an address in standard notation.
    ['0x7f.0.0.1', 'invalid'],
    ['127.1', 'invalid'],
    ['1.2.3.256', 'invalid'],
    ['::g', 'invalid'],
    ['example.com', 'invalid'],
    ['', 'invalid'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });
});

describe('addressInCidr', () => {
  it.each([
    ['10.1.2.3', '10.0.0.0/8', true],
    ['11.1.2.3', '10.0.0.0/8', false],
    ['10.0.0.7', '10.0.0.5/30', true],
    ['10.0.0.8', '10.0.0.5/30', false],
    ['192.168.1.9', '192.168.1.9', true],
    ['192.168.1.10', '192.168.1.9', false],
    ['8.8.8.8', '0.0.0.0/0', true],
    ['fd12::1', 'fd00::/8', true],
    ['fe80::1', 'fd00::/8', false],
    ['::ffff:10.0.0.1', '10.0.0.0/8', false],
    ['10.0.0.1', '::/0', false],
    ['10.0.0.1', '10.0.0.0/33', false],
    ['10.0.0.1', '10.0.0.0/x', false],
    ['not an address', '10.0.0.0/8', false],
  ])('%s in %s: %s', (address, cidr, inside) => {
    expect(addressInCidr(address, cidr)).toBe(inside);
  });
});
