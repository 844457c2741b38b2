// No secret byte of a service key in the database (docs/keys.md "The database"): a service started
// with named keys is used (a closing, its proof, the log's head and checkpoint, a webhook delivered),
// stopped, and then every file of its PGlite data directory, and a pg_dump of its Postgres database,
// is searched for the keys' seeds and expanded secrets, raw, in hex and in base64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha512 } from '@noble/hashes/sha2.js';
import { PG_URL } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { run, startService, TSX } from './proc.ts';

/** The 32-byte seeds of the key files `keys generate` wrote into `dir`. */
async function generatedSeeds(dir: string): Promise<{ env: Record<string, string>; seeds: Uint8Array[] }> {
  const r = await run([...TSX, 'keys', 'generate', '--out', dir]);
  assert.equal(r.code, 0, r.stderr);
  const seeds = ['issuer.key', 'webhook.key'].map((f) => {
    const b64 = readFileSync(join(dir, f), 'utf8').trim().split('+').slice(4).join('+');
    return new Uint8Array(Buffer.from(b64, 'base64').subarray(1));
  });
  return { env: { ISSUER_KEY: `file:${join(dir, 'issuer.key')}`, WEBHOOK_KEY: `file:${join(dir, 'webhook.key')}` }, seeds };
}

/**
 * Every form a key's secret could be stored in: the seed, SHA-512(seed) whole and its halves (the
 * clamped scalar and the nonce prefix, RFC 8032 §5.1.5), each raw, as hex (both cases) and as base64
 * (padded and url-safe).
 */
function secretForms(seed: Uint8Array): Array<{ what: string; bytes: Buffer }> {
  const h = sha512(seed);
  const scalar = Uint8Array.from(h.subarray(0, 32));
  scalar[0] &= 248;
  scalar[31] &= 127;
  scalar[31] |= 64;
  const values: Array<[string, Uint8Array]> = [
    ['seed', seed],
    ['sha512(seed)', h],
    ['scalar', scalar],
    ['prefix', h.subarray(32)],
    ['unclamped scalar', h.subarray(0, 32)],
  ];
  return values.flatMap(([what, v]) => {
    const b = Buffer.from(v);
    return [
      { what: `${what} raw`, bytes: b },
      { what: `${what} hex`, bytes: Buffer.from(b.toString('hex')) },
      { what: `${what} HEX`, bytes: Buffer.from(b.toString('hex').toUpperCase()) },
      { what: `${what} base64`, bytes: Buffer.from(b.toString('base64').replace(/=+$/, '')) },
      { what: `${what} base64url`, bytes: Buffer.from(b.toString('base64url')) },
    ];
  });
}

function assertNoSecret(where: string, content: Buffer, seeds: Uint8Array[]) {
  for (const seed of seeds)
    for (const f of secretForms(seed)) assert.equal(content.indexOf(f.bytes), -1, `${where} holds a key's ${f.what}`);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

/** Uses a started service as a deployment would: a webhook receiver, a closing, the log's head and checkpoint. */
async function use(url: string) {
  const received: string[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push(String(req.headers['x-proof-signature'] ?? ''));
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const hook = await call('POST', '/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook` });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const payer = (await call('POST', '/v1/agents', { label: 'payer' })).body;
    const payee = (await call('POST', '/v1/agents', { label: 'payee' })).body;
    const e = (
      await call('POST', '/v1/escrows', {
        amount: '5',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      })
    ).body;
    assert.equal((await call('POST', `/v1/escrows/${e.id}/fund`)).status, 200);
    const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'report' } });
    assert.equal(d.status, 201, JSON.stringify(d.body));
    assert.equal((await call('GET', '/v1/log/head')).status, 200);
    assert.equal((await fetch(`${url}/v1/log/checkpoint`)).status, 200);
    const until = Date.now() + 60_000;
    while (received.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    assert.ok(
      received.some((s) => s !== ''),
      'a signed webhook was delivered',
    );
  } finally {
    await new Promise<void>((r) => receiver.close(() => r()));
  }
}

test('a used PGlite data directory holds no secret byte of the issuer or webhook key', { timeout: 600_000 }, async () => {
  const root = mkdtempSync(join(tmpdir(), 'keydump-'));
  try {
    const { env, seeds } = await generatedSeeds(join(root, 'keys'));
    const dataDir = join(root, 'data');
    const s = await startService(TSX, { DATA_DIR: dataDir, ...env }, 150_000);
    await use(s.url);
    assert.equal(await s.stop(), 0, s.stderr());
    const files = filesUnder(dataDir);
    assert.ok(files.length > 50 && files.some((f) => /\/base\//.test(f)), 'the database files are there');
    let bytes = 0;
    for (const f of files) {
      const content = readFileSync(f);
      bytes += content.length;
      assertNoSecret(f, content, seeds);
    }
    assert.ok(bytes > 1_000_000, `searched ${bytes} bytes`);
    // The search finds a key where there is one: a row as the earlier version stored it (hex seed).
    const oldRow = Buffer.from(`issuer\t${Buffer.from(seeds[0]).toString('hex')}\t2026-01-01`);
    assert.throws(() => assertNoSecret('an old service_keys row', oldRow, seeds), /seed hex/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a pg_dump of a used Postgres database holds no secret byte of the issuer or webhook key', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
  timeout: 600_000,
}, async () => {
  const root = mkdtempSync(join(tmpdir(), 'keydump-pg-'));
  const name = `keydump_${process.pid}_${Date.now().toString(36)}`;
  const admin = new URL(PG_URL!);
  const target = new URL(PG_URL!);
  target.pathname = `/${name}`;
  execFileSync('psql', [admin.toString(), '-qc', `CREATE DATABASE ${name}`]);
  try {
    const { env, seeds } = await generatedSeeds(join(root, 'keys'));
    const s = await startService(TSX, { DATABASE_URL: target.toString(), ...env }, 150_000);
    await use(s.url);
    assert.equal(await s.stop(), 0, s.stderr());
    const dump = execFileSync('pg_dump', ['--no-owner', target.toString()], { maxBuffer: 1 << 28 });
    assert.match(dump.toString('utf8'), /COPY public\.proofs /, 'the dump has the proofs');
    assert.match(
      dump.toString('utf8'),
      /COPY public\.service_keys \(key_id, purpose, public_key, secret_key, valid_from, valid_until, seq, source\)/,
    );
    assertNoSecret('pg_dump', dump, seeds);
  } finally {
    execFileSync('psql', [admin.toString(), '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
    rmSync(root, { recursive: true, force: true });
  }
});
