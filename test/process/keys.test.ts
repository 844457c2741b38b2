// The service's keys as operators meet them (docs/keys.md), as started processes: a key file that is
// missing, open to others or malformed, a database without named keys, a second instance with other
// keys, a database an earlier version wrote with the keys inside (with and without the same keys
// named), and the `keys generate` / `keys export` commands. Each refusal is one line naming the variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { issuerKeyId } from '../../src/crypto/ids.ts';
import { formatNoteKey } from '../../src/crypto/keyText.ts';
import { MIGRATIONS, splitStatements } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { failsNaming, run, startService, TSX, TSX_ANYWHERE } from './proc.ts';

const ORIGIN = 'escrow-settlement.local/log';

function tmp(tag: string) {
  return mkdtempSync(join(tmpdir(), `keys-${tag}-`));
}

/** `keys generate --out dir` as an operator runs it; returns the two sources. */
async function generate(dir: string, extra: string[] = []): Promise<{ ISSUER_KEY: string; WEBHOOK_KEY: string }> {
  const r = await run([...TSX, 'keys', 'generate', '--out', dir, ...extra]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /mode 0600/);
  return { ISSUER_KEY: `file:${join(dir, 'issuer.key')}`, WEBHOOK_KEY: `file:${join(dir, 'webhook.key')}` };
}

const issuerOf = async (url: string) => (await (await fetch(`${url}/health`)).json()).issuer as string;

test('a key file that is missing, readable by others or malformed, or only one key named, stops the start with one line naming the variable', {
  timeout: 300_000,
}, async () => {
  const dir = tmp('bad');
  try {
    const keys = await generate(dir);
    const env = { DATA_DIR: ':memory:' };
    await failsNaming({ ...env, ...keys, ISSUER_KEY: `file:${join(dir, 'absent.key')}` }, 'ISSUER_KEY', /absent\.key does not exist/);
    chmodSync(join(dir, 'webhook.key'), 0o644);
    await failsNaming({ ...env, ...keys }, 'WEBHOOK_KEY', /webhook\.key has mode 0644: group or others may read it; chmod 600/);
    chmodSync(join(dir, 'webhook.key'), 0o600);
    writeFileSync(join(dir, 'bad.key'), 'PRIVATE+KEY+x+00000000+AAAA\n', { mode: 0o600 });
    await failsNaming({ ...env, ...keys, ISSUER_KEY: `file:${join(dir, 'bad.key')}` }, 'ISSUER_KEY', /bad\.key is not an Ed25519 key/);
    await failsNaming({ ...env, ISSUER_KEY: keys.ISSUER_KEY }, 'WEBHOOK_KEY', /is required when ISSUER_KEY is set/);
    // One key for both: refused, whichever way it is named (docs/keys.md "Key files").
    await failsNaming({ ...env, ...keys, WEBHOOK_KEY: keys.ISSUER_KEY }, 'WEBHOOK_KEY', /names the same key as ISSUER_KEY .*must differ/);
    await failsNaming(
      { ...env, ...keys, WEBHOOK_KEY: keys.ISSUER_KEY.replace('file:', 'file://') },
      'WEBHOOK_KEY',
      /names the same key as ISSUER_KEY/,
    );
    // Read whole, /proc/self/pagemap takes gigabytes: refused by its name, at once.
    await failsNaming(
      { ...env, ...keys, ISSUER_KEY: 'file:/proc/self/pagemap' },
      'ISSUER_KEY',
      /is under \/proc: a key file must be outside/,
    );
    await failsNaming({ ...env, ...keys, ISSUER_KEY: 'vault:issuer' }, 'ISSUER_KEY', /must be file:<path> or pkcs11:<URI>/);
    await failsNaming(
      { ...env, ...keys, LOG_ORIGIN: 'other.example/log' },
      'ISSUER_KEY',
      /is named escrow-settlement\.local\/log, but LOG_ORIGIN is other\.example\/log/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with DATABASE_URL and no key variable nor DATA_DIR the service exits saying how to create and name key files, writing nothing', {
  timeout: 60_000,
}, async () => {
  const cwd = tmp('cwd');
  try {
    const r = await run(TSX_ANYWHERE, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', ISSUER_KEY: '', WEBHOOK_KEY: '' }, { cwd });
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      /^escrow-settlement: bad configuration: ISSUER_KEY: with DATABASE_URL the service signs with keys you name: create them with `.* keys generate --out DIR` and start with ISSUER_KEY=file:DIR\/issuer\.key WEBHOOK_KEY=file:DIR\/webhook\.key/,
    );
    assert.deepEqual(readdirSync(cwd), [], 'nothing written to the working directory (no ./.escrow-data)');
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('the sandbox generates its keys once into DATA_DIR/keys (0700, files 0600) and signs with the same key after a restart', {
  timeout: 300_000,
}, async () => {
  const dataDir = tmp('sandbox');
  try {
    let s = await startService(TSX, { DATA_DIR: dataDir }, 150_000);
    const first = await issuerOf(s.url);
    assert.match(s.stderr(), /"keys":"generated into [^"]+\/keys","production":"name the keys: ISSUER_KEY and WEBHOOK_KEY/);
    assert.equal(await s.stop(), 0);
    assert.equal(statSync(join(dataDir, 'keys')).mode & 0o777, 0o700);
    for (const f of ['issuer.key', 'webhook.key']) assert.equal(statSync(join(dataDir, 'keys', f)).mode & 0o777, 0o600);
    s = await startService(TSX, { DATA_DIR: dataDir }, 150_000);
    assert.equal(await issuerOf(s.url), first);
    assert.match(s.stderr(), /"keys":"from [^"]+\/keys"/);
    assert.equal(await s.stop(), 0);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a second instance configured with other keys exits naming both key ids; the first configured key became the first era', {
  timeout: 400_000,
}, async () => {
  const root = tmp('second');
  try {
    const a = await generate(join(root, 'a'));
    const b = await generate(join(root, 'b'));
    const dataDir = join(root, 'data');
    const s = await startService(TSX, { DATA_DIR: dataDir, ...a }, 150_000);
    const issuer = await issuerOf(s.url);
    const keys = (await (await fetch(`${s.url}/.well-known/proof-issuer.json`)).json()).keys;
    assert.deepEqual(
      keys.map((k: { publicKey: string }) => k.publicKey),
      [issuer],
    );
    assert.equal(await s.stop(), 0);
    const line = await run(TSX, { DATA_DIR: dataDir, ...b });
    assert.equal(line.code, 1);
    const idA = keys[0].keyId;
    const m =
      /^escrow-settlement: bad configuration: ISSUER_KEY: key (iss_[0-9a-f]{16}) \(file:[^)]+\) is not an issuer key era of this database, whose issuer key is (iss_[0-9a-f]{16})/.exec(
        line.stderr,
      );
    assert.ok(m, line.stderr);
    assert.notEqual(m[1], idA);
    assert.equal(m[2], idA);
    assert.equal(line.stderr.trim().split('\n').length, 1);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a signed-note issuer key names the log origin when LOG_ORIGIN is unset', { timeout: 300_000 }, async () => {
  const dir = tmp('origin');
  try {
    const keys = await generate(dir, ['--name', 'proofs.example.org/log']);
    const s = await startService(TSX, { DATA_DIR: ':memory:', ...keys }, 150_000);
    const note = await (await fetch(`${s.url}/v1/log/checkpoint`)).text();
    assert.equal(note.split('\n')[0], 'proofs.example.org/log');
    assert.equal(await s.stop(), 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A PGlite directory as the earlier version left it: migrations before 014 and its keys in service_keys. */
async function legacyDataDir(dir: string) {
  const db = await openPglite(dir);
  const kp = { issuer: generateKeyPair(), webhook: generateKeyPair() };
  await db.tx(async (tx) => {
    await tx.query(
      'CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const m of MIGRATIONS.filter((x) => x.version < 14)) {
      for (const stmt of splitStatements(m.sql)) await tx.query(stmt);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
    for (const p of ['issuer', 'webhook'] as const)
      await tx.query(`INSERT INTO service_keys (key_id, purpose, public_key, secret_key, valid_from) VALUES ($1, $2, $3, $4, svc_now())`, [
        p === 'issuer' ? issuerKeyId(kp[p].publicKey) : `whk_${sha256Hex(kp[p].publicKey).slice(0, 16)}`,
        p,
        toHex(kp[p].publicKey),
        toHex(kp[p].secretKey),
      ]);
  });
  await db.close();
  return { issuer: toHex(kp.issuer.publicKey), secrets: [toHex(kp.issuer.secretKey), toHex(kp.webhook.secretKey)] };
}

async function storedSecrets(dir: string): Promise<number> {
  const db = await openPglite(dir);
  try {
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM service_keys WHERE secret_key IS NOT NULL');
    return n;
  } finally {
    await db.close();
  }
}

test('a database an earlier version wrote starts only with its own keys named, then erases them; export writes them as 0600 files', {
  timeout: 600_000,
}, async () => {
  const root = tmp('legacy');
  try {
    const dataDir = join(root, 'data');
    const legacy = await legacyDataDir(dataDir);
    // No key named, no keys dir: refused, naming the export command; nothing is erased.
    await failsNaming({ DATA_DIR: dataDir }, 'DATA_DIR', /holds a database but not its keys .* run `.* keys export --out .*\/data\/keys`/);
    // Other keys named: refused, naming the export command; nothing is erased.
    const other = await generate(join(root, 'other'));
    await failsNaming(
      { DATA_DIR: dataDir, ...other },
      'ISSUER_KEY',
      /this database still holds the service's private keys .* run `.* keys export --out DIR`/,
    );
    assert.equal(await storedSecrets(dataDir), 2, 'nothing erased by a refused start');
    // The export command writes them out (0600), never over a file, and the database is unchanged.
    const out = join(root, 'exported');
    const ex = await run([...TSX, 'keys', 'export', '--out', out], { DATA_DIR: dataDir });
    assert.equal(ex.code, 0, ex.stderr);
    for (const f of ['issuer.key', 'webhook.key']) assert.equal(statSync(join(out, f)).mode & 0o777, 0o600);
    const again = await run([...TSX, 'keys', 'export', '--out', out], { DATA_DIR: dataDir });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /issuer\.key exists: a key is never overwritten/);
    assert.equal(await storedSecrets(dataDir), 2);
    // Started with them: the same issuer signs, and the stored secrets are gone.
    const named = { ISSUER_KEY: `file:${join(out, 'issuer.key')}`, WEBHOOK_KEY: `file:${join(out, 'webhook.key')}` };
    const s = await startService(TSX, { DATA_DIR: dataDir, ...named }, 150_000);
    assert.equal(await issuerOf(s.url), legacy.issuer);
    assert.match(s.stderr(), /erased the private keys this database held/);
    assert.equal(await s.stop(), 0);
    assert.equal(await storedSecrets(dataDir), 0);
    const none = await run([...TSX, 'keys', 'export', '--out', join(root, 'none')], { DATA_DIR: dataDir });
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /holds no private key: nothing to export/);
    assert.equal(existsSync(join(root, 'none', 'issuer.key')), false);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('keys generate never overwrites a key and refuses unknown arguments', { timeout: 60_000 }, async () => {
  const dir = tmp('gen');
  try {
    await generate(dir);
    const before = statSync(join(dir, 'issuer.key')).mtimeMs;
    const r = await run([...TSX, 'keys', 'generate', '--out', dir]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^escrow-settlement keys: --out: .*issuer\.key exists: a key is never overwritten\n$/);
    assert.equal(statSync(join(dir, 'issuer.key')).mtimeMs, before);
    const bad = await run([...TSX, 'keys', 'make']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /has no subcommand "make" \(usage: keys generate --out DIR/);
    const k = generateKeyPair();
    assert.match(formatNoteKey(ORIGIN, k.secretKey), /^PRIVATE\+KEY\+/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('after a rotation the next start signs with the new keys: a sandbox rotated without a source, and named keys started with the old ISSUER_KEY and WEBHOOK_KEY', {
  timeout: 300_000,
}, async () => {
  const root = 'root-secret-0123456789';
  const webhookKeyOf = async (url: string) =>
    (await (await fetch(`${url}/v1/webhooks`, { headers: { authorization: `Bearer ${root}` } })).json()).signingKey as string;
  const rotate = async (url: string, body: unknown, path = '/v1/admin/issuer/rotate') => {
    const r = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${root}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = await r.json();
    assert.equal(r.status, 201, JSON.stringify(json));
    return json.active.publicKey as string;
  };
  const dataDir = tmp('rotated');
  const keyDir = tmp('rotated-named');
  try {
    // The sandbox's generated keys: the new one is written to DATA_DIR/keys/ and read from there at the next start.
    let s = await startService(TSX, { DATA_DIR: dataDir, API_KEY: root }, 150_000);
    const rotated = await rotate(s.url, {});
    const rotatedWebhook = await rotate(s.url, {}, '/v1/admin/webhooks/rotate-key');
    assert.equal(await s.stop(), 0, s.stderr());
    s = await startService(TSX, { DATA_DIR: dataDir, API_KEY: root }, 150_000);
    assert.equal(await issuerOf(s.url), rotated);
    assert.equal(await webhookKeyOf(s.url), rotatedWebhook);
    assert.equal(await s.stop(), 0, s.stderr());

    // Named keys: rotated to a new file; a start still naming the old file signs with the new one (its era's source).
    const named = await generate(keyDir);
    const next = join(keyDir, 'issuer-next.key');
    writeFileSync(next, formatNoteKey(ORIGIN, crypto.getRandomValues(new Uint8Array(32))), { mode: 0o600 });
    const env = { DATA_DIR: join(dataDir, 'named'), API_KEY: root, ...named };
    s = await startService(TSX, env, 150_000);
    const active = await rotate(s.url, { key: `file:${next}` });
    const nextWebhook = join(keyDir, 'webhook-next.key');
    writeFileSync(nextWebhook, formatNoteKey('escrow-settlement-webhook', crypto.getRandomValues(new Uint8Array(32))), { mode: 0o600 });
    const activeWebhook = await rotate(s.url, { key: `file:${nextWebhook}` }, '/v1/admin/webhooks/rotate-key');
    assert.equal(await s.stop(), 0, s.stderr());
    s = await startService(TSX, env, 150_000);
    assert.equal(await issuerOf(s.url), active);
    assert.equal(await webhookKeyOf(s.url), activeWebhook, 'the old WEBHOOK_KEY is an era: the start signs with the active one');
    assert.equal(await s.stop(), 0, s.stderr());
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(keyDir, { recursive: true, force: true });
  }
});
