// The test witness and the cosignature code (Ed25519 cosignature/v1 and ML-DSA-44 subtree/v1), checked
// against published and vendored vectors and against each other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { publicKeyOf, sign } from '@escrow-settlement/protocol/crypto/ed25519';
import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js';
import {
  COSIGNATURE_ALG,
  formatCheckpoint,
  formatVerifierKey,
  MLDSA_COSIGNATURE_ALG,
  noteKeyHash,
  parseVerifierKey,
  signNote,
  splitNote,
} from '@escrow-settlement/protocol/tlog/checkpoint';
import { base64Encode } from '@escrow-settlement/protocol/tlog/encoding';
import {
  cosign,
  cosignatureTime,
  countCosignatures,
  parseWitnessKey,
  subtreeCosignedMessage,
} from '@escrow-settlement/protocol/tlog/cosignature';
import { createTestWitness, tamper } from './witness.ts';

const notes = JSON.parse(readFileSync(new URL('../vectors/signed-note/signed-note-vectors.json', import.meta.url), 'utf8'));
const tree = JSON.parse(readFileSync(new URL('../vectors/rfc6962-reference-tree/reference-tree-8.json', import.meta.url), 'utf8'));
const self = notes.selfGeneratedCheckpoint;
const unhex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));

test('cosign() reproduces the vendored cosignature/v1 line byte for byte, and it verifies', () => {
  const seed = unhex(self.witnessSeedHex);
  const line = cosign(
    self.checkpointBody,
    { name: self.witnessName, publicKey: publicKeyOf(seed), secretKey: seed },
    self.cosignatureTimestamp,
  );
  assert.equal(line, self.cosignatureLine);
  assert.equal(formatVerifierKey(self.witnessName, publicKeyOf(seed), COSIGNATURE_ALG), self.witnessVerifierKey);
  const key = parseWitnessKey(self.witnessVerifierKey);
  const [sig] = splitNote(`${self.checkpointBody}\n${line}`).signatures;
  assert.equal(cosignatureTime(self.checkpointBody, sig, key), self.cosignatureTimestamp);
  assert.equal(cosignatureTime(self.checkpointBody.replace('\n8\n', '\n9\n'), sig, key), null, 'over another checkpoint');
  const counted = countCosignatures(self.cosignedCheckpoint, [self.witnessVerifierKey]);
  assert.deepEqual(
    counted.valid.map((v) => v.timestamp),
    [self.cosignatureTimestamp],
  );
});

test('the C2SP tlog-cosignature example line has the published layout: key ID, big-endian timestamp, 64-byte signature', () => {
  const f = notes.c2spFormatOnly;
  const [sig] = splitNote(`${f.checkpoint.split('\n\n')[0]}\n\n${f.cosignatureLine}\n`).signatures;
  assert.equal(Buffer.from(sig.keyId).toString('hex'), f.cosignatureParsed.keyIdHex);
  assert.equal(
    new DataView(sig.signature.buffer, sig.signature.byteOffset).getBigUint64(0).toString(),
    f.cosignatureParsed.timestampBigEndianU64,
  );
  assert.equal(sig.signature.length - 8, f.cosignatureParsed.signatureBytes);
});

test('an Ed25519 (0x01) key is not a witness key', () => {
  assert.throws(() => parseWitnessKey(self.logVerifierKey), /not a witness cosignature key \(type 0x04 Ed25519 or 0x06 ML-DSA-44\)/);
});

// The vendored log key signs checkpoints of the RFC 6962 reference tree at each size.
const logSeed = unhex(self.logSeedHex);
const origin = 'example.com/escrow-settlement-log';
const checkpointOf = (size: number, root = tree.rootsBySize[String(size)]) =>
  signNote(formatCheckpoint({ origin, size, rootHash: unhex(root) }), {
    name: origin,
    publicKey: publicKeyOf(logSeed),
    sign: (m) => sign(m, logSeed),
  });
const proofOf = (m: number, n: number): string[] => tree.consistency.find((c: any) => c.first === m && c.second === n)?.proof ?? [];
const body = (old: number, proof: string[], note: string) =>
  `old ${old}\n${proof.map((h) => `${base64Encode(unhex(h))}\n`).join('')}\n${note}`;
const post = (w: ReturnType<typeof createTestWitness>, b: string) =>
  w.fetch(new Request('http://witness.test/add-checkpoint', { method: 'POST', body: b }));

test('the test witness follows tlog-witness: cosigns from 0, then only consistent growth; 409 names its size; 422, 403, 404, 400', async () => {
  const w = createTestWitness('witness.test/w1', [self.logVerifierKey]);
  assert.equal(
    self.checkpointBody,
    formatCheckpoint({ origin, size: 8, rootHash: unhex(tree.rootsBySize['8']) }),
    'the vendored checkpoint is the reference tree of 8',
  );
  const first = await post(w, body(0, [], checkpointOf(1)));
  assert.equal(first.status, 200);
  const line = await first.text();
  assert.equal(countCosignatures(checkpointOf(1) + line, [w.vkey]).valid.length, 1);
  // Stale old size: 409 with the size the witness has.
  const stale = await post(w, body(0, [], checkpointOf(8)));
  assert.equal(stale.status, 409);
  assert.equal(stale.headers.get('content-type'), 'text/x.tlog.size');
  assert.equal(await stale.text(), '1\n');
  // A proof that does not verify: 422.
  assert.equal((await post(w, body(1, proofOf(6, 8), checkpointOf(8)))).status, 422);
  // Another tree at size 8 (a fork): no proof can make it consistent.
  assert.equal((await post(w, body(1, proofOf(1, 8), checkpointOf(8, tree.rootsBySize['7'])))).status, 422);
  // The real growth, with the published reference proof 1 -> 8.
  const grown = await post(w, body(1, proofOf(1, 8), checkpointOf(8)));
  assert.equal(grown.status, 200);
  assert.equal(countCosignatures(checkpointOf(8) + (await grown.text()), [w.vkey]).valid.length, 1);
  assert.equal(w.state.get(origin)?.size, 8);
  // Signed by someone else: 403. Unknown origin: 404. Nonsense: 400.
  const forged = checkpointOf(8).replace(/— .*\n$/, `— ${origin} ${base64Encode(new Uint8Array(68))}\n`);
  assert.equal((await post(w, body(8, [], forged))).status, 403);
  const stranger = signNote(formatCheckpoint({ origin: 'other.example/log', size: 1, rootHash: unhex(tree.rootsBySize['1']) }), {
    name: 'other.example/log',
    publicKey: publicKeyOf(logSeed),
    sign: (m) => sign(m, logSeed),
  });
  assert.equal((await post(w, body(0, [], stranger))).status, 404);
  assert.equal((await post(w, 'hello')).status, 400);
  assert.equal((await post(w, body(9, [], checkpointOf(8)))).status, 400, 'old larger than the checkpoint');
});

// ---- ML-DSA-44 (signed-note type 0x06, tlog-cosignature "ML-DSA-44 signed message").

const torchwood = JSON.parse(readFileSync(new URL('../vectors/signed-note/torchwood-mldsa44-checkpoint.json', import.meta.url), 'utf8'));

test('an ML-DSA-44 subtree/v1 signature made by another implementation (torchwood) verifies, and not over another checkpoint', () => {
  const key = parseWitnessKey(torchwood.vkey);
  assert.equal(key.alg, MLDSA_COSIGNATURE_ALG);
  assert.equal(key.publicKey.length, 1312);
  assert.ok(torchwood.vkey.endsWith('='), 'a 1313-byte key blob ends in base64 padding');
  assert.equal(formatVerifierKey(key.name, key.publicKey, MLDSA_COSIGNATURE_ALG), torchwood.vkey);
  const { text, signatures } = splitNote(torchwood.signedNote);
  const [sig] = signatures;
  assert.equal(sig.signature.length, 8 + 2420, 'u64 timestamp || 2420-byte signature');
  assert.equal(cosignatureTime(text, sig, key), torchwood.timestamp);
  assert.deepEqual(
    countCosignatures(torchwood.signedNote, [torchwood.vkey]).valid.map((v) => v.timestamp),
    [0],
  );
  assert.equal(cosignatureTime(text.replace('\n1\n', '\n2\n'), sig, key), null, 'another size');
  const flipped = sig.signature.slice();
  flipped[8 + 1000] ^= 1;
  assert.equal(cosignatureTime(text, { ...sig, signature: flipped }, key), null, 'a changed signature');
  const later = sig.signature.slice();
  later[7] = 1;
  assert.equal(cosignatureTime(text, { ...sig, signature: later }, key), null, 'another timestamp (it is signed)');
});

test("the test witness's ML-DSA-44 message and line, written from the spec, match the protocol package's and verify", async () => {
  const w = createTestWitness('witness.test/pq', [self.logVerifierKey], 'mldsa44');
  const key = parseWitnessKey(w.vkey);
  assert.equal(key.alg, MLDSA_COSIGNATURE_ALG);
  assert.match(w.vkey, /^witness\.test\/pq\+[0-9a-f]{8}\+B[A-Za-z0-9+/]{1750}=$/, 'name+hash+base64(0x06 || key), padded');
  w.now = () => 1_700_000_000;
  const res = await post(w, body(0, [], checkpointOf(8)));
  assert.equal(res.status, 200);
  const line = await res.text();
  const note = checkpointOf(8) + line;
  const sig = splitNote(note).signatures.at(-1)!;
  assert.deepEqual(sig.keyId, noteKeyHash(w.name, key.publicKey, 0x06), 'key ID = SHA-256(name || "\\n" || 0x06 || key)[:4]');
  assert.equal(new DataView(sig.signature.buffer, sig.signature.byteOffset).getBigUint64(0), 1_700_000_000n);
  assert.equal(sig.signature.length, 8 + 2420);
  assert.equal(cosignatureTime(self.checkpointBody, sig, key), 1_700_000_000);
  assert.deepEqual(
    countCosignatures(note, [w.vkey]).valid.map((v) => v.name),
    [w.name],
  );
  // The same bytes from both sides: the message the protocol builds is the one the witness signed.
  const msg = subtreeCosignedMessage({
    cosigner: w.name,
    timestamp: 1_700_000_000,
    origin,
    start: 0,
    end: 8,
    hash: unhex(tree.rootsBySize['8']),
  });
  assert.equal(Buffer.from(msg.subarray(0, 12)).toString('latin1'), 'subtree/v1\n\0');
  assert.equal(msg.length, 12 + 1 + w.name.length + 8 + 1 + origin.length + 8 + 8 + 32);
  assert.ok(ml_dsa44.verify(sig.signature.slice(8), msg, key.publicKey));
  // An Ed25519 witness of the same name is another key: its line does not count for the ML-DSA key.
  const ed = createTestWitness('witness.test/pq', [self.logVerifierKey]);
  const edLine = await (await post(ed, body(0, [], checkpointOf(8)))).text();
  assert.equal(countCosignatures(checkpointOf(8) + edLine, [w.vkey]).valid.length, 0);
  assert.equal(countCosignatures(checkpointOf(8) + edLine + line, [w.vkey, ed.vkey]).valid.length, 2);
  // Tampered: key ID and timestamp intact, the signature changed.
  const bad = splitNote(checkpointOf(8) + tamper(line)).signatures.at(-1)!;
  assert.deepEqual(bad.keyId, sig.keyId);
  assert.equal(cosignatureTime(self.checkpointBody, bad, key), null);
  assert.deepEqual(countCosignatures(checkpointOf(8) + tamper(line), [w.vkey]).missing[0].reason, 'its cosignature does not verify');
});

test('ML-DSA-44 verifier keys: round trip, and malformed ones refused saying what is wrong', () => {
  const w = createTestWitness('witness.test/pq2', [], 'mldsa44');
  const key = parseVerifierKey(w.vkey);
  assert.equal(formatVerifierKey(key.name, key.publicKey, MLDSA_COSIGNATURE_ALG), w.vkey);
  const [name, id, b64] = [w.vkey.split('+')[0], w.vkey.split('+')[1], w.vkey.split('+').slice(2).join('+')];
  const short = Buffer.from(b64, 'base64').subarray(0, 33).toString('base64');
  assert.throws(
    () => parseVerifierKey(`${name}+${id}+${short}`),
    /type 0x06 verifier key holds a 1312-byte ML-DSA-44 public key, got 32 bytes/,
  );
  assert.throws(() => parseVerifierKey(`${name}+${id}+${b64.slice(0, -1)}`), TypeError, 'padding removed: not canonical base64');
  assert.throws(() => parseVerifierKey(`${name}+00000000+${b64}`), /key ID does not match/);
  const unknown = Buffer.from(b64, 'base64');
  unknown[0] = 0x07;
  assert.throws(() => parseVerifierKey(`${name}+${id}+${unknown.toString('base64')}`), /unknown verifier key type 0x07/);
  assert.throws(() => formatVerifierKey(name, new Uint8Array(32), MLDSA_COSIGNATURE_ALG), /ML-DSA-44 public key must be 1312 bytes/);
});
