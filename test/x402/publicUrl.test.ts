// PUBLIC_URL (docs/protocol.md §15, §15.4): parsed once, validated, and the only source of x402 resource URLs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';

const base = { DATA_DIR: ':memory:' };

test('PUBLIC_URL defaults to the listening address, IPv6 in brackets', () => {
  assert.equal(parseConfig(base).publicUrl, 'http://127.0.0.1:4280');
  assert.equal(parseConfig({ ...base, HOST: '::1', PORT: '8080' }).publicUrl, 'http://[::1]:8080');
  assert.equal(parseConfig({ ...base, PUBLIC_URL: '' }).publicUrl, 'http://127.0.0.1:4280', 'empty is unset');
});

test('PUBLIC_URL keeps origin and path prefix, without a trailing slash', () => {
  assert.equal(parseConfig({ ...base, PUBLIC_URL: 'https://escrow.example.com/' }).publicUrl, 'https://escrow.example.com');
  assert.equal(parseConfig({ ...base, PUBLIC_URL: 'https://EXAMPLE.com:443/api/escrow//' }).publicUrl, 'https://example.com/api/escrow');
});

test('a PUBLIC_URL that is not an absolute http(s) base URL stops start-up naming the variable', () => {
  for (const bad of [
    'escrow.example.com',
    'ftp://example.com',
    'https://example.com/?a=1',
    'https://example.com/#x',
    'https://user:pw@example.com',
    'http://',
  ]) {
    assert.throws(
      () => parseConfig({ ...base, PUBLIC_URL: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'PUBLIC_URL' && /absolute http\(s\) URL/.test(e.message),
      bad,
    );
  }
});
