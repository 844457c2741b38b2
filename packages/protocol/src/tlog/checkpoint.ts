// C2SP signed notes (c2sp.org/signed-note, Ed25519 type 0x01), their verifier keys (also the witness
// types 0x04 and 0x06 of c2sp.org/tlog-cosignature) and tlog checkpoints (c2sp.org/tlog-checkpoint).
// Signing and verification are injected so this module does not depend on a crypto library.
import { sha256 } from '@noble/hashes/sha2.js';
import { base64Decode, base64Encode, hexEncode } from './encoding.ts';
import { bytesEqual, HASH_SIZE } from './hash.ts';

/** Signature type byte for Ed25519 note signatures (signed-note "Signature types"). */
export const ED25519_ALG = 0x01;
/** Signature type byte for timestamped Ed25519 witness cosignatures (c2sp.org/tlog-cosignature). */
export const COSIGNATURE_ALG = 0x04;
/** Signature type byte for timestamped ML-DSA-44 witness cosignatures (c2sp.org/tlog-cosignature, subtree/v1). */
export const MLDSA_COSIGNATURE_ALG = 0x06;
/** The public key size of each verifier key type this module reads (an ML-DSA-44 key is 1312 bytes, FIPS 204). */
const KEY_BYTES: Record<number, number> = { [ED25519_ALG]: 32, [COSIGNATURE_ALG]: 32, [MLDSA_COSIGNATURE_ALG]: 1312 };
const KEY_KIND: Record<number, string> = {
  [ED25519_ALG]: 'Ed25519',
  [COSIGNATURE_ALG]: 'Ed25519',
  [MLDSA_COSIGNATURE_ALG]: 'ML-DSA-44',
};
/** Notes with more signature lines than this are rejected as malformed (spec minimum is 16). */
export const MAX_NOTE_SIGNATURES = 100;

const EM_DASH_PREFIX = '\u2014 ';
const utf8 = new TextEncoder();

export type Checkpoint = { origin: string; size: number; rootHash: Uint8Array; extensions?: string[] };
export type NoteSigner = { name: string; publicKey: Uint8Array; sign: (msg: Uint8Array) => Uint8Array };
export type NoteVerifier = {
  name: string;
  publicKey: Uint8Array;
  verify: (sig: Uint8Array, msg: Uint8Array, pub: Uint8Array) => boolean;
};
/** One signature line: `signature` excludes the 4-byte key ID prefix. */
export type NoteSignature = { name: string; keyId: Uint8Array; signature: Uint8Array };
export type VerifierKey = { name: string; keyId: Uint8Array; alg: number; publicKey: Uint8Array };

function checkKeyName(name: unknown): asserts name is string {
  // Key names are non-empty with no Unicode spaces and no '+' (signed-note "Format").
  if (typeof name !== 'string' || name === '' || /[\s+]/u.test(name) || /[\u0000-\u001f]/.test(name)) {
    throw new TypeError('key name must be non-empty without spaces, "+" or control characters');
  }
}

function checkPublicKey(pub: unknown): asserts pub is Uint8Array {
  if (!(pub instanceof Uint8Array) || pub.length !== 32) {
    throw new TypeError('Ed25519 public key must be 32 bytes');
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Note text: valid UTF-8, no control characters but newline, ends in newline (signed-note "Format"). */
function checkNoteText(text: unknown): asserts text is string {
  if (typeof text !== 'string' || !text.endsWith('\n')) throw new TypeError('note text must end in newline');
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text)) throw new TypeError('note contains control characters');
  if (LONE_SURROGATE.test(text)) throw new TypeError('note is not valid UTF-8');
}

/** Key ID = SHA-256(name || 0x0A || alg || publicKey)[:4] (signed-note "Signatures"). */
export function noteKeyHash(name: string, publicKey: Uint8Array, alg: number = ED25519_ALG): Uint8Array {
  checkKeyName(name);
  if (!(publicKey instanceof Uint8Array)) throw new TypeError('public key must be a Uint8Array');
  const n = utf8.encode(name);
  const buf = new Uint8Array(n.length + 2 + publicKey.length);
  buf.set(n, 0);
  buf[n.length] = 0x0a;
  buf[n.length + 1] = alg;
  buf.set(publicKey, n.length + 2);
  return sha256(buf).slice(0, 4);
}

/** "— name base64(keyId || signature)\n" with the em dash U+2014. */
export function formatSignatureLine(name: string, keyId: Uint8Array, signature: Uint8Array): string {
  checkKeyName(name);
  if (keyId.length !== 4) throw new TypeError('key ID must be 4 bytes');
  const blob = new Uint8Array(4 + signature.length);
  blob.set(keyId, 0);
  blob.set(signature, 4);
  return `${EM_DASH_PREFIX}${name} ${base64Encode(blob)}\n`;
}

/**
 * Splits a signed note into its text (including the final newline) and signature lines; the text
 * ends at the last blank line. Throws TypeError when the note is malformed.
 */
export function splitNote(note: string): { text: string; signatures: NoteSignature[] } {
  checkNoteText(note);
  const cut = note.lastIndexOf('\n\n');
  if (cut < 0) throw new TypeError('signed note has no blank line before its signatures');
  const text = note.slice(0, cut + 1);
  const lines = note.slice(cut + 2, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES) throw new TypeError('too many signatures in note');
  const signatures = lines.map((line): NoteSignature => {
    if (!line.startsWith(EM_DASH_PREFIX)) throw new TypeError('malformed signature line');
    const rest = line.slice(EM_DASH_PREFIX.length);
    const space = rest.indexOf(' ');
    if (space < 0) throw new TypeError('malformed signature line');
    const name = rest.slice(0, space);
    checkKeyName(name);
    const blob = base64Decode(rest.slice(space + 1));
    if (blob.length < 5) throw new TypeError('signature too short');
    return { name, keyId: blob.slice(0, 4), signature: blob.slice(4) };
  });
  return { text, signatures };
}

/** Signs note text with an Ed25519 key: text + "\n" + signature line (signed-note "Format"). */
export function signNote(text: string, signer: NoteSigner): string {
  checkNoteText(text);
  checkPublicKey(signer.publicKey);
  const keyId = noteKeyHash(signer.name, signer.publicKey, ED25519_ALG);
  const sig = signer.sign(utf8.encode(text));
  if (!(sig instanceof Uint8Array) || sig.length !== 64) throw new TypeError('Ed25519 signature must be 64 bytes');
  return `${text}\n${formatSignatureLine(signer.name, keyId, sig)}`;
}

/**
 * Verifies a signed note against one trusted Ed25519 key. Signatures whose name and key ID do not
 * both match the key are ignored; `verified` is true iff at least one matching signature exists and
 * every matching one verifies (signed-note "Signatures"). Throws TypeError if the note is malformed.
 */
export function verifyNote(note: string, verifier: NoteVerifier): { text: string; verified: boolean } {
  const { text, signatures } = splitNote(note);
  checkPublicKey(verifier.publicKey);
  const keyId = noteKeyHash(verifier.name, verifier.publicKey, ED25519_ALG);
  const known = signatures.filter((s) => s.name === verifier.name && bytesEqual(s.keyId, keyId));
  const msg = utf8.encode(text);
  const verified =
    known.length > 0 && known.every((s) => s.signature.length === 64 && verifier.verify(s.signature, msg, verifier.publicKey) === true);
  return { text, verified };
}

/** "name+hex(keyId)+base64(alg || publicKey)" verifier key encoding (types 0x01, 0x04 and 0x06). */
export function formatVerifierKey(name: string, publicKey: Uint8Array, alg: number = ED25519_ALG): string {
  checkKeyName(name);
  const size = KEY_BYTES[alg];
  if (size === undefined) throw new TypeError(`unknown verifier key type 0x${alg.toString(16).padStart(2, '0')}`);
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== size)
    throw new TypeError(`${KEY_KIND[alg]} public key must be ${size} bytes`);
  const blob = new Uint8Array(1 + size);
  blob[0] = alg;
  blob.set(publicKey, 1);
  return `${name}+${hexEncode(noteKeyHash(name, publicKey, alg))}+${base64Encode(blob)}`;
}

/**
 * Parses a verifier key, splitting on the first two '+' only (base64 may contain '+'). Accepts
 * Ed25519 (0x01), Ed25519 cosignature (0x04) and ML-DSA-44 cosignature (0x06) keys; throws
 * TypeError on anything else or when the key ID does not match the key. Callers check `alg`.
 */
export function parseVerifierKey(vkey: string): VerifierKey {
  const i1 = vkey.indexOf('+');
  const i2 = i1 < 0 ? -1 : vkey.indexOf('+', i1 + 1);
  if (i2 < 0) throw new TypeError('verifier key must be name+keyid+key');
  const name = vkey.slice(0, i1);
  checkKeyName(name);
  const idHex = vkey.slice(i1 + 1, i2);
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new TypeError('verifier key ID must be 8 lowercase hex digits');
  const blob = base64Decode(vkey.slice(i2 + 1));
  const alg = blob[0];
  const size = KEY_BYTES[alg];
  if (size === undefined)
    throw new TypeError(
      `unknown verifier key type ${alg === undefined ? '(no key bytes)' : `0x${alg.toString(16).padStart(2, '0')}`} (known: 0x01 and 0x04 Ed25519, 0x06 ML-DSA-44)`,
    );
  if (blob.length !== 1 + size)
    throw new TypeError(`a type 0x0${alg} verifier key holds a ${size}-byte ${KEY_KIND[alg]} public key, got ${blob.length - 1} bytes`);
  const publicKey = blob.slice(1);
  const keyId = noteKeyHash(name, publicKey, alg);
  if (hexEncode(keyId) !== idHex) throw new TypeError('verifier key ID does not match the key');
  return { name, keyId, alg, publicKey };
}

function checkLine(what: string, line: unknown): asserts line is string {
  if (typeof line !== 'string' || line === '' || /[\u0000-\u001f]/.test(line) || LONE_SURROGATE.test(line)) {
    throw new TypeError(`${what} must be a non-empty line without control characters`);
  }
}

/** Checkpoint note text: origin, decimal size, base64 root, optional extension lines, each + "\n". */
export function formatCheckpoint(cp: Checkpoint): string {
  checkLine('origin', cp.origin);
  if (!Number.isSafeInteger(cp.size) || cp.size < 0) throw new RangeError('size must be a non-negative safe integer');
  if (!(cp.rootHash instanceof Uint8Array) || cp.rootHash.length !== HASH_SIZE) {
    throw new TypeError('rootHash must be a 32-byte Uint8Array');
  }
  const ext = cp.extensions ?? [];
  ext.forEach((l) => checkLine('extension line', l));
  return [cp.origin, String(cp.size), base64Encode(cp.rootHash), ...ext].map((l) => `${l}\n`).join('');
}

/** Parses checkpoint note text (not the signed note; see splitNote / verifyNote). Throws on malformed text. */
export function parseCheckpoint(text: string): Required<Checkpoint> {
  if (typeof text !== 'string' || !text.endsWith('\n')) throw new TypeError('checkpoint must end in newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw new TypeError('checkpoint needs origin, size and root hash lines');
  const [origin, sizeText, rootText, ...extensions] = lines;
  checkLine('origin', origin);
  if (!/^(?:0|[1-9][0-9]*)$/.test(sizeText)) throw new TypeError('checkpoint size must be decimal without leading zeros');
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw new RangeError('checkpoint size exceeds 2^53 - 1');
  const rootHash = base64Decode(rootText);
  if (rootHash.length !== HASH_SIZE) throw new TypeError('checkpoint root hash must be 32 bytes');
  extensions.forEach((l) => checkLine('extension line', l));
  return { origin, size, rootHash, extensions };
}
