// Issuer key rotation: new proofs use the new key, old proofs keep verifying by their era (docs/protocol.md §18.6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { bearer, HOSTED, ROOT, withKey } from './helpers.ts';
import { chmodSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config.ts';
import { formatNoteKey } from '../../src/crypto/keyText.ts';
import { nodeKeySources } from '../../src/node/serviceKeys.ts';
import { NOT_USABLE } from '../../src/node/keyFiles.ts';

const ORIGIN = parseConfig({}).logOrigin;
const dir = mkdtempSync(join(tmpdir(), 'rotate-'));
let seq = 0;

/** A new issuer key file (mode 0600 unless told), named as the log's origin unless told: its source. */
function keyFile(opts: { mode?: number; name?: string; text?: string } = {}): string {
  const path = join(dir, `issuer-${seq++}.key`);
  writeFileSync(path, opts.text ?? formatNoteKey(opts.name ?? ORIGIN, crypto.getRandomValues(new Uint8Array(32))), { mode: 0o600 });
  chmodSync(path, opts.mode ?? 0o600);
  return `file:${path}`;
}

/** The one refusal a rotation's unusable file gets, whatever rule it broke (docs/keys.md "Key files"). */
const notUsable = new RegExp(`^key: \\S+ ${NOT_USABLE.replace(/[()/]/g, '\\$&')}$`);

/** A link to /proc/self/pagemap: its source. */
function procLink(): string {
  const path = join(dir, `link-${seq++}`);
  symlinkSync('/proc/self/pagemap', path);
  return `file:${path}`;
}

/** The rotation body a hosted deployment sends: a new key's source. */
const withSource = () => ({ key: keyFile() });

describeStores(
  'issuer key rotation',
  (h) => {
    test('a rotation retires the signing key, proofs it signed keep verifying, and new proofs use the new key', async () => {
      const root = withKey(h(), ROOT);
      const before = await settled(root);
      const oldKey = (await root.req('GET', '/health')).body.issuer;
      assert.equal(before.proof.signature.signer, oldKey);

      const rot = await root.req('POST', '/v1/admin/issuer/rotate', withSource());
      assert.equal(rot.status, 201, rot.text);
      assert.deepEqual(Object.keys(rot.body).sort(), ['active', 'retired']);
      const { active, retired } = rot.body;
      assert.equal(retired.publicKey, oldKey);
      assert.notEqual(active.publicKey, oldKey);
      assert.match(active.keyId, /^iss_[0-9a-f]{16}$/);
      assert.equal(active.validUntil, undefined);
      assert.equal(typeof retired.validUntil, 'string');
      assert.ok(Date.parse(retired.validUntil) <= Date.parse(active.validFrom));

      const old = await root.req('GET', `/v1/proofs/${before.proof.id}/verify`);
      assert.deepEqual(old.body, {
        proofId: before.proof.id,
        signatureValid: true,
        trailIntact: true,
        trailHeadMatches: true,
        issuer: oldKey,
      });

      const after = await settled(root);
      assert.equal(after.proof.signature.signer, active.publicKey);
      const fresh = await root.req('GET', `/v1/proofs/${after.proof.id}/verify`);
      assert.equal(fresh.body.signatureValid, true);
      assert.equal(fresh.body.issuer, active.publicKey);

      const doc = await h().req('GET', '/.well-known/proof-issuer.json');
      // The document adds each key's C2SP vkey (test/client/vkey.test.ts checks it) to the eras rotation returns.
      assert.deepEqual(
        doc.body.keys.slice(-2).map(({ vkey: _vkey, ...k }: { vkey: string }) => k),
        [retired, active],
      );
      assert.equal((await root.req('GET', '/health')).body.issuer, active.publicKey);
    });

    test('POST /v1/verify recognises a proof signed before the rotation by its retired era', async () => {
      const root = withKey(h(), ROOT);
      const { proof } = await settled(root);
      const rot = await root.req('POST', '/v1/admin/issuer/rotate', withSource());
      assert.equal(rot.status, 201);
      const res = await h().req('POST', '/v1/verify', proof);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.valid, true);
      assert.equal(res.body.keyId, rot.body.retired.keyId);
      assert.equal(res.body.validUntil, rot.body.retired.validUntil);
    });

    test('the signed log head moves to the new key after a rotation', async () => {
      const rot = await h().req('POST', '/v1/admin/issuer/rotate', withSource(), bearer(ROOT));
      const head = await h().req('GET', '/v1/log/head');
      assert.equal(head.status, 200, head.text);
      assert.equal(head.body.keyId, rot.body.active.keyId);
    });

    test('every era is listed oldest first, each retired one with validUntil, the last one active', async () => {
      const { keys } = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.ok(keys.length >= 4);
      assert.ok(keys.slice(0, -1).every((k: { validUntil?: string }) => typeof k.validUntil === 'string'));
      assert.equal(keys.at(-1).validUntil, undefined);
      const from = keys.map((k: { validFrom: string }) => Date.parse(k.validFrom));
      assert.deepEqual(
        from,
        [...from].sort((a, b) => a - b),
      );
    });

    test('a rotation request with body fields is 400 and rotates nothing', async () => {
      const n = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.length;
      assert.match(
        expectError(await h().req('POST', '/v1/admin/issuer/rotate', { force: true }, bearer(ROOT)), 400, 'bad_request'),
        /force/,
      );
      assert.equal((await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.length, n);
    });

    test('the new key comes by its source: the proofs and heads after it are signed with the key in that file', async () => {
      const source = keyFile();
      const rot = await h().req('POST', '/v1/admin/issuer/rotate', { key: source }, bearer(ROOT));
      assert.equal(rot.status, 201, rot.text);
      const loaded = await nodeKeySources({ logOrigin: ORIGIN }).load(source, 'test');
      assert.equal(rot.body.active.publicKey, Buffer.from(loaded.signer.publicKey).toString('hex'));
      assert.equal((await h().req('GET', '/v1/log/head')).body.keyId, rot.body.active.keyId);
      const after = await settled(withKey(h(), ROOT));
      assert.equal(after.proof.signature.signer, rot.body.active.publicKey);
    });

    const bad: Array<[string, () => unknown, RegExp]> = [
      ['no key (the keys are named)', () => ({}), /key is required: this service signs with named keys/],
      ['a missing file', () => ({ key: `file:${join(dir, 'absent.key')}` }), notUsable],
      ['a file group and others may read', () => ({ key: keyFile({ mode: 0o644 }) }), notUsable],
      ['a directory', () => ({ key: `file:${dir}` }), notUsable],
      ['a file of another user, open to others', () => ({ key: 'file:/etc/passwd' }), notUsable],
      ['a file over 64 KiB', () => ({ key: keyFile({ text: `${'#'.repeat(64 * 1024)}\n` }) }), notUsable],
      // Read whole, this froze the service (gigabytes in seconds): it is refused by its name.
      [
        '/proc/self/pagemap',
        () => ({ key: 'file:/proc/self/pagemap' }),
        /^key: \/proc\/self\/pagemap is under \/proc: a key file must be outside/,
      ],
      ['a link into /proc', () => ({ key: procLink() }), notUsable],
      ['a malformed file', () => ({ key: keyFile({ text: 'not a key\n' }) }), /^key: .* is neither a signed-note private key/],
      [
        'a key named other than the log origin',
        () => ({ key: keyFile({ name: 'other.example/log' }) }),
        /named other\.example\/log, but the log's origin/,
      ],
      ['a source of no known kind', () => ({ key: 'env:ISSUER' }), /^key: must be file:<path> or pkcs11:<URI>/],
      ['a non-string key', () => ({ key: 7 }), /key/],
    ];
    for (const [what, body, why] of bad) {
      test(`a rotation to ${what} is 400 naming key, and nothing changes`, async () => {
        const before = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys;
        const head = (await h().req('GET', '/v1/log/head')).body.keyId;
        assert.match(expectError(await h().req('POST', '/v1/admin/issuer/rotate', body(), bearer(ROOT)), 400, 'bad_request'), why);
        assert.deepEqual((await h().req('GET', '/.well-known/proof-issuer.json')).body.keys, before);
        assert.equal((await h().req('GET', '/v1/log/head')).body.keyId, head);
      });
    }

    test('a rotation to a key that already was an era is 409 and changes nothing', async () => {
      const source = keyFile();
      assert.equal((await h().req('POST', '/v1/admin/issuer/rotate', { key: source }, bearer(ROOT))).status, 201);
      assert.equal((await h().req('POST', '/v1/admin/issuer/rotate', withSource(), bearer(ROOT))).status, 201);
      const before = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys;
      assert.match(
        expectError(await h().req('POST', '/v1/admin/issuer/rotate', { key: source }, bearer(ROOT)), 409, 'invalid_state'),
        /already an era of this service/,
      );
      assert.deepEqual((await h().req('GET', '/.well-known/proof-issuer.json')).body.keys, before);
    });

    test('two concurrent rotations both succeed and leave exactly one active key', async () => {
      const [a, b] = await Promise.all([1, 2].map(() => h().req('POST', '/v1/admin/issuer/rotate', withSource(), bearer(ROOT))));
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      const { keys } = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.equal(keys.filter((k: { validUntil?: string }) => k.validUntil === undefined).length, 1);
    });
  },
  { ...HOSTED, PUBLIC_RATE_LIMIT_MAX: '100000' },
  { keySources: nodeKeySources({ logOrigin: ORIGIN }) },
);

describeStores(
  'issuer key rotation on generated keys',
  (h) => {
    test('a service on generated keys may omit the key: a new one is generated into DATA_DIR/keys/ (0600) and signs from then on', async () => {
      const rot = await h().req('POST', '/v1/admin/issuer/rotate', undefined, bearer(ROOT));
      assert.equal(rot.status, 201, rot.text);
      const path = join(dir, 'sandbox', 'keys', `issuer-${rot.body.active.keyId}.key`);
      const loaded = await nodeKeySources({ logOrigin: ORIGIN }).load(`file:${path}`, 'test');
      assert.equal(Buffer.from(loaded.signer.publicKey).toString('hex'), rot.body.active.publicKey);
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.equal((await h().req('GET', '/v1/log/head')).body.keyId, rot.body.active.keyId);
    });
  },
  HOSTED,
  { keySources: nodeKeySources({ generateInto: join(dir, 'sandbox'), logOrigin: ORIGIN }) },
);
