// The test witness and the cosignature/v1 code, checked against published and vendored vectors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { publicKeyOf, sign } from '@escrow-settlement/protocol/crypto/ed25519';
import { COSIGNATURE_ALG, formatCheckpoint, formatVerifierKey, signNote, splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { base64Encode } from '@escrow-settlement/protocol/tlog/encoding';
import { cosign, cosignatureTime, countCosignatures, parseWitnessKey } from '@escrow-settlement/protocol/tlog/cosignature';
import { createTestWitness } from './witness.ts';

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
  assert.throws(() => parseWitnessKey(self.logVerifierKey), /not a cosignature\/v1 key/);
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
