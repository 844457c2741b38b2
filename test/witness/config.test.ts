import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { createTestWitness } from './witness.ts';

const base = { DATA_DIR: ':memory:' };
const w1 = createTestWitness('w1.example');
const w2 = createTestWitness('w2.example');
const pq = createTestWitness('pq.example', [], 'mldsa44');

const refused = (env: Record<string, string>, variable: string, why: RegExp) => {
  assert.throws(
    () => parseConfig({ ...base, ...env }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.variable, variable);
      assert.match(e.message, why);
      assert.ok(!e.message.includes('\n'), 'one line');
      return true;
    },
  );
};

test('no witnesses by default: quorum 0, interval 1000', () => {
  const c = parseConfig(base);
  assert.deepEqual([c.witnesses, c.witnessQuorum, c.witnessIntervalMs], [[], 0, 1000]);
});

test('WITNESSES lists vkey=prefix pairs; the quorum defaults to all of them', () => {
  const c = parseConfig({ ...base, WITNESSES: `${w1.vkey}=https://w1.example/submit/, ${w2.vkey}=http://10.0.0.2:8080` });
  assert.deepEqual(c.witnesses, [
    { vkey: w1.vkey, name: 'w1.example', url: 'https://w1.example/submit' },
    { vkey: w2.vkey, name: 'w2.example', url: 'http://10.0.0.2:8080' },
  ]);
  assert.equal(c.witnessQuorum, 2);
  assert.equal(
    parseConfig({ ...base, WITNESSES: `${w1.vkey}=https://a/,${w2.vkey}=https://b/`, WITNESS_QUORUM: '1', WITNESS_INTERVAL_MS: '250' })
      .witnessQuorum,
    1,
  );
});

test('bad witness settings stop start-up with one line naming the variable', () => {
  refused({ WITNESSES: 'https://w1.example' }, 'WITNESSES', /<witness vkey>=<submission URL prefix>/);
  refused({ WITNESSES: `${w1.vkey.replace('w1.example', 'w9.example')}=https://a/` }, 'WITNESSES', /not a witness verifier key/);
  refused(
    { WITNESSES: 'log.example+98747a72+AbMiTvVyi9WcbAJboSLSjxiD3NCKjZrh5+40vfDhGgRg=https://a/' },
    'WITNESSES',
    /not a witness verifier key/,
  );
  refused({ WITNESSES: `${w1.vkey}=ftp://a/` }, 'WITNESSES', /absolute http\(s\) URL/);
  refused({ WITNESSES: `${w1.vkey}=https://a/?x=1` }, 'WITNESSES', /absolute http\(s\) URL/);
  refused({ WITNESSES: `${w1.vkey}=https://a/,${w1.vkey}=https://b/` }, 'WITNESSES', /listed twice/);
  refused({ WITNESS_QUORUM: '1' }, 'WITNESS_QUORUM', /names no witness/);
  refused({ WITNESSES: `${w1.vkey}=https://a/`, WITNESS_QUORUM: '2' }, 'WITNESS_QUORUM', /from 1 to the 1 witnesses/);
  refused({ WITNESSES: `${w1.vkey}=https://a/`, WITNESS_QUORUM: '0' }, 'WITNESS_QUORUM', /whole number/);
  refused({ WITNESS_INTERVAL_MS: 'soon' }, 'WITNESS_INTERVAL_MS', /whole number/);
  refused({ WITNESS_INTERVAL_MS: '5' }, 'WITNESS_INTERVAL_MS', /from 10/);
});

test('WITNESSES takes ML-DSA-44 vkeys: each entry is split where its http(s) URL starts, so the key keeps its "=" padding', () => {
  assert.ok(pq.vkey.endsWith('='));
  const c = parseConfig({
    ...base,
    WITNESSES: `${pq.vkey}=https://pq.example/submit/,${w1.vkey}=http://10.0.0.1:8080`,
    WITNESS_QUORUM: '2',
  });
  assert.deepEqual(c.witnesses, [
    { vkey: pq.vkey, name: 'pq.example', url: 'https://pq.example/submit' },
    { vkey: w1.vkey, name: 'w1.example', url: 'http://10.0.0.1:8080' },
  ]);
  assert.equal(c.witnessQuorum, 2);
  // The same witness name with both key types: two keys, two witnesses.
  const both = createTestWitness('pq.example');
  assert.equal(parseConfig({ ...base, WITNESSES: `${pq.vkey}=https://a/,${both.vkey}=https://a/` }).witnesses.length, 2);
});

test('a malformed ML-DSA-44 witness entry stops start-up with one line naming WITNESSES and what is wrong', () => {
  const [name, id, ...rest] = pq.vkey.split('+');
  const b64 = rest.join('+');
  const truncated = `${name}+${id}+${Buffer.from(b64, 'base64').subarray(0, 1000).toString('base64')}`;
  refused(
    { WITNESSES: `${truncated}=https://a/` },
    'WITNESSES',
    /not a witness verifier key .*1312-byte ML-DSA-44 public key, got 999 bytes/,
  );
  refused({ WITNESSES: `${name}+${id}+${b64.slice(0, -1)}=https://a/` }, 'WITNESSES', /not a witness verifier key/);
  refused({ WITNESSES: `${name}+deadbeef+${b64}=https://a/` }, 'WITNESSES', /not a witness verifier key.*key ID does not match/);
  refused({ WITNESSES: pq.vkey }, 'WITNESSES', /<witness vkey>=<submission URL prefix>, the URL starting with http:\/\/ or https:\/\//);
  refused({ WITNESSES: `${pq.vkey}=pq.example/submit` }, 'WITNESSES', /the URL starting with http:\/\/ or https:\/\//);
  refused({ WITNESSES: `${pq.vkey}=ftp://pq.example/` }, 'WITNESSES', /submission prefix of pq\.example must be an absolute http\(s\) URL/);
  refused({ WITNESSES: `${pq.vkey}=https://a/,${pq.vkey}=https://b/` }, 'WITNESSES', /pq\.example is listed twice/);
});
