// C2SP verifier keys (docs/protocol.md §12.7): each issuer key in /.well-known/proof-issuer.json carries
// `vkey`, and the log's checkpoint verifies with it. The vkey is parsed and the checkpoint checked
// here with a small independent parser and node:crypto (not the service's note code), then with the
// client's verifyCheckpoint, and the client's encoder is held to the vendored C2SP and Go vectors.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { issuerDocumentKeys, issuerVkey, verifyCheckpoint } from '@escrow-settlement/client';
import { describeStores } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { bearer, HOSTED, ROOT, withKey } from '../admin/helpers.ts';

const vectors = JSON.parse(readFileSync(new URL('../vectors/signed-note/signed-note-vectors.json', import.meta.url), 'utf8'));

/** c2sp.org/signed-note verifier key, read by hand: name+hex(keyhash)+base64(0x01 ‖ key), split on the first two '+'. */
function parseVkey(vkey: string) {
  const i = vkey.indexOf('+');
  const j = vkey.indexOf('+', i + 1);
  const name = vkey.slice(0, i);
  const hash = vkey.slice(i + 1, j);
  const blob = Buffer.from(vkey.slice(j + 1), 'base64');
  assert.equal(blob.length, 33, 'type byte and a 32-byte key');
  assert.equal(blob[0], 0x01, 'Ed25519 signature type');
  const key = blob.subarray(1);
  // key hash = SHA-256(name ‖ "\n" ‖ 0x01 ‖ key)[:4]
  const expected = createHash('sha256')
    .update(Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0x0a, 0x01]), key]))
    .digest()
    .subarray(0, 4)
    .toString('hex');
  return { name, hash, expected, keyHex: key.toString('hex'), key };
}

/** Verifies a signed note by hand: the text, a blank line, then "— name base64(keyhash ‖ signature)" lines. */
function noteSignedBy(note: string, vkey: string): boolean {
  const { name, hash, key } = parseVkey(vkey);
  const cut = note.lastIndexOf('\n\n');
  const text = note.slice(0, cut + 1);
  const spki = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key]), format: 'der', type: 'spki' });
  return note
    .slice(cut + 2)
    .split('\n')
    .filter(Boolean)
    .some((line) => {
      const m = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!m || m[1] !== name) return false;
      const sig = Buffer.from(m[2], 'base64');
      return sig.subarray(0, 4).toString('hex') === hash && nodeVerify(null, Buffer.from(text, 'utf8'), spki, sig.subarray(4));
    });
}

describeStores(
  'the issuer document publishes a C2SP vkey per key',
  (h) => {
    test('each key carries vkey = <LOG_ORIGIN>+<key hash>+<base64(0x01 ‖ key)> for its own public key', async () => {
      const root = withKey(h(), ROOT);
      await settled(root);
      const doc = (await root.req('GET', '/.well-known/proof-issuer.json')).body;
      assert.ok(doc.keys.length >= 1);
      for (const k of doc.keys) {
        const v = parseVkey(k.vkey);
        assert.equal(v.name, h().config.logOrigin);
        assert.equal(v.keyHex, k.publicKey);
        assert.equal(v.hash, v.expected);
      }
      assert.deepEqual(issuerDocumentKeys(doc), doc.keys, 'the client accepts the document it serves');
    });

    test("the checkpoint verifies with the active key's vkey, by hand and with verifyCheckpoint; after rotation only the new vkey does", async () => {
      const root = withKey(h(), ROOT);
      await settled(root);
      const checkpoint = async () => (await root.req('GET', '/v1/log/checkpoint')).text;
      const vkeys = async () =>
        (await root.req('GET', '/.well-known/proof-issuer.json')).body.keys.map((k: { vkey: string }) => k.vkey) as string[];

      const before = await checkpoint();
      const [first] = (await vkeys()).slice(-1);
      assert.equal(noteSignedBy(before, first), true);
      const r = verifyCheckpoint(before, first);
      assert.equal(r.ok, true, r.detail);
      const head = (await root.req('GET', '/v1/log/head')).body;
      assert.equal(r.checkpoint!.size, head.logSize);
      assert.equal(Buffer.from(r.checkpoint!.rootHash).toString('hex'), head.rootHash);

      const tampered = before.replace(/\n(\d+)\n/, (_, n) => `\n${Number(n) + 1}\n`);
      assert.equal(noteSignedBy(tampered, first), false);
      assert.match(verifyCheckpoint(tampered, first).detail, /no valid signature by/);

      assert.equal((await h().req('POST', '/v1/admin/issuer/rotate', undefined, bearer(ROOT))).status, 201);
      const all = await vkeys();
      const after = await checkpoint();
      const newest = all[all.length - 1];
      assert.notEqual(newest, first);
      assert.equal(noteSignedBy(after, newest), true);
      assert.equal(verifyCheckpoint(after, newest).ok, true);
      assert.equal(noteSignedBy(after, first), false, 'the retired key does not sign new checkpoints');
      assert.equal(verifyCheckpoint(after, first).ok, false);
      assert.ok(all.includes(first), 'the retired key stays published with its vkey');
    });
  },
  HOSTED,
);

describe('the client vkey helpers against the vendored C2SP and Go vectors', () => {
  test('issuerVkey encodes the published verifier keys exactly', () => {
    const go = vectors.goSumdbNote;
    assert.equal(issuerVkey('PeterNeumann', go.ed25519PublicKeyHex), go.verifierKey);
    const c2sp = vectors.c2spSignedNoteExample;
    assert.equal(issuerVkey('example.com/foo', c2sp.ed25519PublicKeyHex), c2sp.verifierKey);
    const self = vectors.selfGeneratedCheckpoint;
    assert.equal(issuerVkey('example.com/escrow-settlement-log', self.logPublicKeyHex), self.logVerifierKey);
    for (const vkey of [go.verifierKey, c2sp.verifierKey, self.logVerifierKey]) {
      const v = parseVkey(vkey);
      assert.equal(v.hash, v.expected, vkey);
    }
  });

  test('verifyCheckpoint accepts the vendored checkpoint (also when cosigned) and refuses notes that are not checkpoints', () => {
    const self = vectors.selfGeneratedCheckpoint;
    const ok = verifyCheckpoint(self.signedCheckpoint, self.logVerifierKey);
    assert.equal(ok.ok, true, ok.detail);
    assert.equal(ok.checkpoint!.size, self.treeSize);
    assert.equal(Buffer.from(ok.checkpoint!.rootHash).toString('hex'), self.rootHashHex);
    assert.equal(verifyCheckpoint(self.cosignedCheckpoint, self.logVerifierKey).ok, true);
    assert.equal(noteSignedBy(self.signedCheckpoint, self.logVerifierKey), true, 'the hand verifier agrees');
    // Correctly signed notes whose text is not a checkpoint.
    const go = vectors.goSumdbNote;
    assert.match(verifyCheckpoint(go.signedNote, go.verifierKey).detail, /^the signed text is not a checkpoint/);
    const c2sp = vectors.c2spSignedNoteExample;
    assert.equal(noteSignedBy(c2sp.signedNote, c2sp.verifierKey), true);
    assert.equal(verifyCheckpoint(c2sp.signedNote, c2sp.verifierKey).ok, false);
    // A key of another name, and a malformed vkey.
    assert.match(verifyCheckpoint(self.signedCheckpoint, go.verifierKey).detail, /no valid signature by PeterNeumann/);
    assert.throws(() => verifyCheckpoint(self.signedCheckpoint, 'no-plus-signs'), TypeError);
  });

  test('issuerDocumentKeys refuses a document whose vkey encodes another key, naming the field', () => {
    const self = vectors.selfGeneratedCheckpoint;
    const key = {
      keyId: 'iss_x',
      alg: 'ed25519',
      publicKey: 'ab'.repeat(32),
      validFrom: '2026-01-01T00:00:00.000Z',
      vkey: self.logVerifierKey,
    };
    assert.throws(() => issuerDocumentKeys({ keys: [key] }), /^TypeError: keys\[0\]\.vkey encodes another key than keys\[0\]\.publicKey/);
    assert.throws(() => issuerDocumentKeys({ keys: [{ ...key, vkey: 'x+y+z' }] }), /keys\[0\]\.vkey is not a C2SP verifier key/);
    assert.throws(() => issuerDocumentKeys({ keys: [] }), /has no keys/);
    assert.throws(() => issuerDocumentKeys([]), /must be an object with a keys array/);
    assert.deepEqual(issuerDocumentKeys({ keys: [{ ...key, publicKey: self.logPublicKeyHex }] }).length, 1);
  });
});
