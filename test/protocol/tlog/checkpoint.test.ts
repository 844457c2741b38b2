// C2SP signed notes and checkpoints against golang.org/x/mod sumdb/note, C2SP examples and self-generated vectors.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import {
  COSIGNATURE_ALG,
  formatCheckpoint,
  formatVerifierKey,
  noteKeyHash,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
  splitNote,
  verifyNote,
  type NoteVerifier,
} from '@escrow-settlement/protocol/tlog/checkpoint';
import { hex, readJson, unb64, unhex } from './helpers.ts';

ed.hashes.sha512 = sha512;

const v = readJson('signed-note/signed-note-vectors.json');
const go = v.goSumdbNote;
const self = v.selfGeneratedCheckpoint;

const verifier = (vkey: string): NoteVerifier => {
  const k = parseVerifierKey(vkey);
  return { name: k.name, publicKey: k.publicKey, verify: (sig, msg, pub) => ed.verify(sig, msg, pub) };
};
const signer = (name: string, seed: Uint8Array) => ({
  name,
  publicKey: ed.getPublicKey(seed),
  sign: (msg: Uint8Array) => ed.sign(msg, seed),
});

describe('signed-note keys', () => {
  it('computes the key ID as SHA-256(name || 0x0A || 0x01 || pubkey)[:4]', () => {
    const pub = unhex(go.ed25519PublicKeyHex);
    assert.equal(hex(noteKeyHash('PeterNeumann', pub)), go.keyIdHex);
    assert.equal(hex(noteKeyHash('example.com/foo', unhex(v.c2spSignedNoteExample.ed25519PublicKeyHex))), '530d903a');
  });

  it('round-trips the published verifier keys through parseVerifierKey and formatVerifierKey', () => {
    for (const vkey of [go.verifierKey, go.secondSigner.verifierKey, v.c2spSignedNoteExample.verifierKey, self.logVerifierKey]) {
      const k = parseVerifierKey(vkey);
      assert.equal(formatVerifierKey(k.name, k.publicKey), vkey);
    }
    assert.equal(hex(parseVerifierKey(go.verifierKey).publicKey), go.ed25519PublicKeyHex);
    const w = parseVerifierKey(self.witnessVerifierKey);
    assert.equal(w.alg, COSIGNATURE_ALG);
    assert.equal(formatVerifierKey(w.name, w.publicKey, COSIGNATURE_ALG), self.witnessVerifierKey);
  });

  it('splits a verifier key on the first two "+" only, since base64 may contain "+"', () => {
    const k = parseVerifierKey(self.logVerifierKey); // its base64 key material contains a '+'
    assert.ok(self.logVerifierKey.split('+').length > 3);
    assert.equal(hex(k.publicKey), self.logPublicKeyHex);
    const plus = formatVerifierKey('a.example/k', new Uint8Array(32).fill(0xfb)); // base64 "+/v7..."
    assert.ok(plus.split('+').length > 3);
    assert.deepEqual(parseVerifierKey(plus).publicKey, new Uint8Array(32).fill(0xfb));
  });

  it('rejects the upstream negative verifier keys (wrong length, unknown algorithm) and bad key IDs', () => {
    for (const line of go.negative as string[]) {
      assert.throws(() => parseVerifierKey(line.split(' ')[0]), TypeError, line);
    }
    assert.throws(() => parseVerifierKey(go.verifierKey.replace('c74f20a3', 'c74f20a4')), TypeError);
    assert.throws(() => parseVerifierKey(go.verifierKey.replace('c74f20a3', 'C74F20A3')), TypeError);
    assert.throws(() => parseVerifierKey('PeterNeumann'), TypeError);
    assert.throws(() => parseVerifierKey('+c74f20a3+' + go.verifierKey.split('+')[2]), TypeError);
  });

  it('derives the published Ed25519 public key from the seed in the Go private key encoding', () => {
    const parts = (go.signerKey as string).split('+'); // PRIVATE+KEY+name+hash+base64(0x01||seed)
    const blob = unb64(parts.slice(4).join('+'));
    assert.equal(blob[0], 0x01);
    assert.equal(hex(blob.slice(1)), go.ed25519SeedHex);
    assert.equal(hex(ed.getPublicKey(blob.slice(1))), go.ed25519PublicKeyHex);
  });
});

describe('signed notes', () => {
  it('signs the sumdb note byte-identically to golang.org/x/mod and verifies it', () => {
    const note = signNote(go.text, signer('PeterNeumann', unhex(go.ed25519SeedHex)));
    assert.equal(note, go.signedNote);
    assert.ok(note.includes('\n\n\u2014 PeterNeumann '));
    assert.deepEqual(verifyNote(note, verifier(go.verifierKey)), { text: go.text, verified: true });
    assert.equal(hex(splitNote(note).signatures[0].signature), go.signatureHex);
  });

  it('verifies a multi-signature note with either known key and ignores the unknown one', () => {
    const note = `${go.signedNote}${go.secondSigner.signatureLine}\n`;
    assert.equal(splitNote(note).signatures.length, 2);
    assert.equal(verifyNote(note, verifier(go.verifierKey)).verified, true);
    assert.equal(verifyNote(note, verifier(go.secondSigner.verifierKey)).verified, true);
  });

  it('verifies the C2SP signed-note example', () => {
    const ex = v.c2spSignedNoteExample;
    const got = verifyNote(ex.signedNote, verifier(ex.verifierKey));
    assert.deepEqual(got, { text: ex.text, verified: true });
    assert.equal(hex(splitNote(ex.signedNote).signatures[0].signature), ex.signatureHex);
  });

  it('reports an unverified note as a value: tampered text, foreign key, or bad signature bytes', () => {
    const vk = verifier(go.verifierKey);
    assert.equal(verifyNote(go.signedNote.replace('cryptography', 'cryptographx'), vk).verified, false);
    assert.equal(verifyNote(go.signedNote, verifier(go.secondSigner.verifierKey)).verified, false);
    const sigB64 = go.signedNote.split(' ').at(-1).trim();
    const bytes = unb64(sigB64);
    bytes[10] ^= 1;
    const flipped = go.signedNote.replace(sigB64, Buffer.from(bytes).toString('base64'));
    assert.equal(verifyNote(flipped, vk).verified, false);
    // A bad signature from the known key spoils the note even if another copy verifies.
    const twoLines = `${go.signedNote}${flipped.slice(flipped.lastIndexOf('\u2014'))}`;
    assert.equal(verifyNote(twoLines, vk).verified, false);
  });

  it('throws a TypeError for malformed notes', () => {
    const vk = verifier(go.verifierKey);
    const bad = [
      go.text, // no signatures
      go.signedNote.slice(0, -1), // no final newline
      go.signedNote.replace('\u2014', '-'), // hyphen instead of em dash
      go.signedNote.replace('PeterNeumann ', 'PeterNeumann  '), // double space
      go.signedNote.replace('If you', 'If\tyou'), // control character
      go.signedNote.replace(/ [A-Za-z0-9+/=]+\n$/, ' not*base64\n'),
      `${go.text}\n\u2014 PeterNeumann AAAA\n`, // signature shorter than key ID + 1 byte
    ];
    for (const note of bad) assert.throws(() => verifyNote(note, vk), TypeError, JSON.stringify(note));
    assert.throws(() => signNote('no newline', signer('k', new Uint8Array(32))), TypeError);
    assert.throws(() => signNote('x\n', signer('bad name', new Uint8Array(32))), TypeError);
    assert.throws(() => signNote('x\n', signer('bad+name', new Uint8Array(32))), TypeError);
  });

  it('round-trips a fresh key: sign, verify, and refuse the same text under another key', () => {
    const seed = ed.utils.randomSecretKey();
    const s = signer('log.example/round-trip', seed);
    const text = 'hello\n\nwith an empty line inside\n';
    const note = signNote(text, s);
    const vk = verifier(formatVerifierKey(s.name, s.publicKey));
    assert.deepEqual(verifyNote(note, vk), { text, verified: true });
    const other = signer(s.name, ed.utils.randomSecretKey());
    assert.equal(verifyNote(note, verifier(formatVerifierKey(other.name, other.publicKey))).verified, false);
  });
});

describe('checkpoints', () => {
  it('formats and signs the self-generated checkpoint byte-identically, and it verifies', () => {
    const body = formatCheckpoint({ origin: self.checkpointBody.split('\n')[0], size: self.treeSize, rootHash: unhex(self.rootHashHex) });
    assert.equal(body, self.checkpointBody);
    const s = signer(parseVerifierKey(self.logVerifierKey).name, unhex(self.logSeedHex));
    assert.equal(hex(s.publicKey), self.logPublicKeyHex);
    assert.equal(signNote(body, s), self.signedCheckpoint);
    const { text, verified } = verifyNote(self.signedCheckpoint, verifier(self.logVerifierKey));
    assert.ok(verified);
    const cp = parseCheckpoint(text);
    assert.equal(cp.size, 8);
    assert.equal(hex(cp.rootHash), self.rootHashHex);
    assert.deepEqual(cp.extensions, []);
  });

  it('keeps the log signature valid on the cosigned checkpoint, and the witness cosignature/v1 verifies', () => {
    const note = self.cosignedCheckpoint;
    assert.equal(verifyNote(note, verifier(self.logVerifierKey)).verified, true);
    const w = parseVerifierKey(self.witnessVerifierKey);
    const { text, signatures } = splitNote(note);
    const cosig = signatures.find((s) => s.name === self.witnessName)!;
    assert.deepEqual(cosig.keyId, noteKeyHash(w.name, w.publicKey, COSIGNATURE_ALG));
    const view = new DataView(cosig.signature.buffer, cosig.signature.byteOffset);
    assert.equal(view.getBigUint64(0), BigInt(self.cosignatureTimestamp));
    const msg = `cosignature/v1\ntime ${self.cosignatureTimestamp}\n${text}`;
    assert.equal(msg, self.cosignedMessage);
    assert.ok(ed.verify(cosig.signature.slice(8), new TextEncoder().encode(msg), w.publicKey));
  });

  it('parses the C2SP tlog-checkpoint example and its cosignature line', () => {
    const f = v.c2spFormatOnly;
    const { text, signatures } = splitNote(f.checkpoint);
    const cp = parseCheckpoint(text);
    assert.equal(cp.origin, 'example.com/behind-the-sofa');
    assert.equal(cp.size, 20852163);
    assert.equal(Buffer.from(cp.rootHash).toString('base64'), 'CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=');
    assert.equal(signatures[0].name, cp.origin);
    assert.equal(formatCheckpoint(cp), text);
    const cosig = splitNote(`${text}\n${f.cosignatureLine}\n`).signatures[0];
    assert.equal(4 + cosig.signature.length, f.cosignatureParsed.totalBytes);
    assert.equal(hex(cosig.keyId), f.cosignatureParsed.keyIdHex);
    assert.equal(
      new DataView(cosig.signature.buffer, cosig.signature.byteOffset).getBigUint64(0).toString(),
      f.cosignatureParsed.timestampBigEndianU64,
    );
  });

  it('round-trips extension lines and sizes beyond 2^32', () => {
    const cp = { origin: 'log.example/x', size: 2 ** 40 + 12345, rootHash: new Uint8Array(32).fill(7), extensions: ['ext one'] };
    const text = formatCheckpoint(cp);
    assert.equal(text, `log.example/x\n1099511640121\n${Buffer.from(cp.rootHash).toString('base64')}\next one\n`);
    assert.deepEqual(parseCheckpoint(text), cp);
  });

  it('throws for malformed checkpoints', () => {
    const root = Buffer.from(new Uint8Array(32)).toString('base64');
    const bad = [
      `o\n1\n${root}`, // no final newline
      `o\n1\n`, // missing root
      `\n1\n${root}\n`, // empty origin
      `o\n01\n${root}\n`, // leading zero
      `o\n-1\n${root}\n`,
      `o\n1\n${root.slice(0, -4)}\n`, // 30-byte root
      `o\n1\n${root} \n`, // trailing space in base64
      `o\n1\n${root}\n\n`, // empty extension line
    ];
    for (const t of bad) assert.throws(() => parseCheckpoint(t), TypeError, JSON.stringify(t));
    assert.throws(() => parseCheckpoint(`o\n9007199254740992\n${root}\n`), RangeError);
    assert.throws(() => formatCheckpoint({ origin: 'a\nb', size: 1, rootHash: new Uint8Array(32) }), TypeError);
    assert.throws(() => formatCheckpoint({ origin: 'o', size: -1, rootHash: new Uint8Array(32) }), RangeError);
    assert.throws(() => formatCheckpoint({ origin: 'o', size: 1, rootHash: new Uint8Array(31) }), TypeError);
  });
});
