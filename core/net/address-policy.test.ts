import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAddressPolicy } from './address-policy.ts';

const noAllow = createAddressPolicy([]);

// [address, why it is refused]
const refused: Array<[string, string]> = [
  ['0.0.0.0', 'this network'],
  ['0.255.255.255', 'this network'],
  ['10.0.0.1', 'private 10/8'],
  ['10.255.255.255', 'private 10/8'],
  ['100.64.0.0', 'CGNAT first'],
  ['100.127.255.255', 'CGNAT last'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'cloud metadata'],
  ['169.254.0.1', 'link-local'],
  ['172.16.0.0', 'private 172.16/12 first'],
  ['172.31.255.255', 'private 172.16/12 last'],
  ['192.0.0.1', 'IETF protocol assignments'],
  ['192.0.2.1', 'TEST-NET-1'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['192.168.0.1', 'private 192.168/16'],
  ['192.168.255.255', 'private 192.168/16'],
  ['198.18.0.0', 'benchmarking first'],
  ['198.19.255.255', 'benchmarking last'],
  ['198.51.100.7', 'TEST-NET-2'],
  ['203.0.113.9', 'TEST-NET-3'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast (SSDP)'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback in brackets'],
  ['fc00::1', 'unique local'],
  ['fd12:3456::1', 'unique local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with zone'],
  ['febf::1', 'link-local last'],
  ['fec0::1', 'deprecated site-local'],
  ['ff02::1', 'multicast'],
  ['ff0e::1', 'global multicast'],
  ['100::1', 'discard-only'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['2001::1', 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
  ['2001:10::1', 'ORCHID'],
  ['5f00::1', 'SRv6 SIDs'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback in hex'],
  ['::FFFF:169.254.169.254', 'IPv4-mapped metadata'],
  ['0:0:0:0:0:ffff:a00:1', 'IPv4-mapped private, long form'],
  ['::127.0.0.1', 'deprecated IPv4-compatible'],
  ['::ffff:0:7f00:1', 'IPv4-translated'],
  ['64:ff9b::7f00:1', 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of metadata'],
  ['64:ff9b::192.168.1.1', 'NAT64 of private'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['2002:7f00:1::', '6to4 of loopback'],
  ['2002:c0a8:101::1', '6to4 of private'],
  ['2002:a9fe:a9fe::', '6to4 of metadata'],
  ['', 'empty'],
  ['not-an-ip', 'not an address'],
  ['127.1', 'short form is not an address'],
  ['1.2.3.4.5', 'not an address'],
];

const allowed: string[] = [
  '1.1.1.1',
  '8.8.8.8',
  '93.184.215.14',
  '100.63.255.255', // just below CGNAT
  '100.128.0.0', // just above CGNAT
  '172.15.255.255', // just below 172.16/12
  '172.32.0.0', // just above 172.16/12
  '198.17.255.255', // just below benchmarking
  '198.20.0.0', // just above benchmarking
  '223.255.255.255', // just below multicast
  '2606:4700:4700::1111',
  '2a00:1450:4001:80b::200e',
  '2001:200::1', // just above 2001::/23
  '::ffff:8.8.8.8', // IPv4-mapped public
  '64:ff9b::808:808', // NAT64 of public
  '2002:808:808::1', // 6to4 of public
];

describe('default policy (empty allow list)', () => {
  for (const [address, why] of refused) {
    test(`refuses ${address || '(empty)'} (${why})`, () => {
      assert.equal(noAllow.isAllowed(address, 443, 'example.com'), false);
    });
  }
  for (const address of allowed) {
    test(`allows public ${address}`, () => {
      assert.equal(noAllow.isAllowed(address, 443, 'example.com'), true);
    });
  }
});

describe('allow entries', () => {
  test('host:port with an IPv4 literal allows that address on that port only', () => {
    const policy = createAddressPolicy(['127.0.0.1:9000']);
    assert.equal(policy.isAllowed('127.0.0.1', 9000, '127.0.0.1'), true);
    assert.equal(policy.isAllowed('::ffff:127.0.0.1', 9000, '127.0.0.1'), true);
    assert.equal(policy.isAllowed('127.0.0.1', 9001, '127.0.0.1'), false);
    assert.equal(policy.isAllowed('127.0.0.2', 9000, '127.0.0.2'), false);
  });

  test('host:port with a host name allows what that name resolves to, on that port only', () => {
    const policy = createAddressPolicy(['MinIO.internal:9000']);
    assert.equal(policy.isAllowed('10.1.2.3', 9000, 'minio.internal'), true);
    assert.equal(policy.isAllowed('10.1.2.3', 9000, 'MINIO.internal.'), true);
    assert.equal(policy.isAllowed('10.1.2.3', 9001, 'minio.internal'), false);
    assert.equal(policy.isAllowed('10.1.2.3', 9000, 'other.internal'), false);
    assert.equal(policy.isAllowed('10.1.2.3', 9000, '10.1.2.3'), false);
  });

  test('[v6]:port allows that IPv6 address on that port, whatever its spelling', () => {
    const policy = createAddressPolicy(['[::1]:8080']);
    assert.equal(policy.isAllowed('::1', 8080, '::1'), true);
    assert.equal(policy.isAllowed('0:0:0:0:0:0:0:1', 8080, '[::1]'), true);
    assert.equal(policy.isAllowed('::1', 8081, '::1'), false);
  });

  test('an IPv4 CIDR range allows every port, including IPv4-mapped spellings', () => {
    const policy = createAddressPolicy(['127.0.0.0/8', '169.254.169.254/32']);
    assert.equal(policy.isAllowed('127.0.0.1', 1, 'localhost'), true);
    assert.equal(policy.isAllowed('127.200.0.9', 65535, 'x'), true);
    assert.equal(policy.isAllowed('::ffff:127.0.0.1', 80, 'x'), true);
    assert.equal(policy.isAllowed('169.254.169.254', 80, 'x'), true);
    assert.equal(policy.isAllowed('169.254.169.253', 80, 'x'), false);
    assert.equal(policy.isAllowed('10.0.0.1', 80, 'x'), false);
    assert.equal(policy.isAllowed('::1', 80, 'x'), false);
  });

  test('an IPv6 CIDR range allows its addresses only', () => {
    const policy = createAddressPolicy(['::1/128', 'fd00:1::/32']);
    assert.equal(policy.isAllowed('::1', 80, 'x'), true);
    assert.equal(policy.isAllowed('fd00:1:2::3', 80, 'x'), true);
    assert.equal(policy.isAllowed('fd00:2::3', 80, 'x'), false);
    assert.equal(policy.isAllowed('127.0.0.1', 80, 'x'), false);
  });

  test('a bare IP literal allows that one address on every port', () => {
    const policy = createAddressPolicy(['10.0.0.5', 'fe80::5']);
    assert.equal(policy.isAllowed('10.0.0.5', 1234, 'x'), true);
    assert.equal(policy.isAllowed('10.0.0.6', 1234, 'x'), false);
    assert.equal(policy.isAllowed('fe80::5', 1234, 'x'), true);
  });

  test('allow entries never refuse public addresses', () => {
    const policy = createAddressPolicy(['127.0.0.1:9000']);
    assert.equal(policy.isAllowed('8.8.8.8', 25, 'example.com'), true);
  });

  test('invalid input addresses stay refused whatever the allow list', () => {
    const policy = createAddressPolicy(['0.0.0.0/0', '::/0']);
    assert.equal(policy.isAllowed('not-an-ip', 80, 'x'), false);
    assert.equal(policy.isAllowed('10.0.0.1', 80, 'x'), true);
  });

  for (const entry of [
    'foo',
    ':80',
    'host:',
    'host:0',
    'host:65536',
    'host:8o',
    '[::1]',
    '[nope]:80',
    '::1:8080x',
    '10.0.0.0/33',
    '::/129',
    'host/8',
    '10.0.0.0/',
    'bad_host!:80',
    'a b:80',
  ]) {
    test(`rejects malformed entry "${entry}"`, () => {
      assert.throws(() => createAddressPolicy([entry]), /allow entry/);
    });
  }
});
