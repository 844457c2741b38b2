// IP address classification for the webhook SSRF guard, as a table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressClass, isIp, isLocalhostName, isPrivateAddress, parseIp, type AddressClass } from '../../src/webhooks/address.ts';

const TABLE: Array<[string, AddressClass]> = [
  // IPv4
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.1', 'public'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.1', 'public'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['1.1.1.1', 'public'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['[::1]', 'loopback'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'private'],
  ['fc00::1', 'ula'],
  ['fd12:3456:789a::1', 'ula'],
  ['ff02::1', 'multicast'],
  ['ff05::1:3', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['2001::1', 'reserved'],
  ['2001:10::1', 'reserved'],
  ['100::1', 'reserved'],
  ['1::', 'reserved'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  // IPv6 forms that carry an IPv4 address are judged by it
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:10.1.2.3', 'private'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:100.64.0.1', 'cgnat'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', 'public'],
  ['::127.0.0.1', 'loopback'],
  ['::8.8.8.8', 'reserved'],
  ['::ffff:0:10.0.0.1', 'private'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['2002:c0a8:0101::1', 'private'],
  ['2002:0808:0808::1', 'public'],
];

for (const [addr, cls] of TABLE) {
  test(`${addr} is ${cls}`, () => {
    assert.equal(addressClass(addr), cls);
    assert.equal(isPrivateAddress(addr), cls !== 'public');
  });
}

const NOT_IPS = [
  'example.com',
  'localhost',
  '1.2.3',
  '1.2.3.4.5',
  '256.0.0.1',
  '01.2.3.4',
  '1.2.3.04',
  '::g',
  ':::',
  '1:::2',
  '1::2::3',
  ':1::',
  '::1:',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7',
  '12345::',
  '::ffff:1.2.3',
  '::1.2.3.4:1',
  '',
  ' 1.2.3.4',
  '[::1',
];

for (const text of NOT_IPS) {
  test(`${JSON.stringify(text)} is not an IP literal: parseIp gives null and addressClass throws`, () => {
    assert.equal(parseIp(text), null);
    assert.equal(isIp(text), false);
    assert.throws(() => addressClass(text), TypeError);
  });
}

test('compressed and full IPv6 spellings parse to the same bytes', () => {
  assert.deepEqual(parseIp('2001:db8::1'), parseIp('2001:0db8:0000:0000:0000:0000:0000:0001'));
  assert.deepEqual(parseIp('::ffff:127.0.0.1'), parseIp('::ffff:7f00:1'));
  assert.deepEqual(parseIp('1:2:3:4:5:6:1.2.3.4')?.bytes, Uint8Array.from([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 2, 3, 4]));
});

test('localhost and its subdomains are this machine by name (RFC 6761)', () => {
  for (const h of ['localhost', 'LOCALHOST', 'localhost.', 'api.localhost']) assert.equal(isLocalhostName(h), true, h);
  for (const h of ['localhost.example.com', 'mylocalhost', 'example.com']) assert.equal(isLocalhostName(h), false, h);
});
