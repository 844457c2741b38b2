// Witness cosignatures (c2sp.org/tlog-cosignature), carried as signed-note lines whose blob is
// keyID (4) || timestamp (8, big-endian seconds) || signature. Two types: Ed25519 (key type 0x04,
// cosignature/v1: a 64-byte signature over "cosignature/v1\ntime <T>\n" and the checkpoint text) and
// ML-DSA-44 (key type 0x06, subtree/v1: a 2420-byte signature over the binary cosigned_message of
// "ML-DSA-44 signed message", which names the cosigner and the origin, size and root hash).
import { sign as edSign, verify as edVerify } from '../crypto/ed25519.ts';
import { MLDSA44_SIGNATURE_BYTES, verifyMlDsa44 } from '../crypto/mldsa44.ts';
import {
  COSIGNATURE_ALG,
  formatSignatureLine,
  MLDSA_COSIGNATURE_ALG,
  noteKeyHash,
  parseCheckpoint,
  parseVerifierKey,
  splitNote,
  type NoteSignature,
  type VerifierKey,
} from './checkpoint.ts';
import { bytesEqual, HASH_SIZE } from './hash.ts';

const utf8 = new TextEncoder();

/** The bytes a cosignature/v1 signs: the header lines, then the checkpoint text (note body) as is. */
export function cosignedMessage(checkpointText: string, timestamp: number): Uint8Array {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError('cosignature timestamp must be a non-negative safe integer');
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${checkpointText}`);
}

const SUBTREE_LABEL = utf8.encode('subtree/v1\n\0');

/**
 * The bytes an ML-DSA-44 cosignature signs (tlog-cosignature "ML-DSA-44 signed message"): the
 * 12-byte label, the u8-length-prefixed cosigner name, the u64 timestamp, the u8-length-prefixed log
 * origin, u64 start and end of the subtree (0 and the size for a checkpoint), the 32-byte root hash.
 */
export function subtreeCosignedMessage(m: {
  cosigner: string;
  timestamp: number;
  origin: string;
  start: number;
  end: number;
  hash: Uint8Array;
}): Uint8Array {
  const name = utf8.encode(m.cosigner);
  const origin = utf8.encode(m.origin);
  if (name.length < 1 || name.length > 255 || origin.length < 1 || origin.length > 255)
    throw new RangeError('the cosigner name and the log origin must each be 1 to 255 bytes');
  for (const n of [m.timestamp, m.start, m.end])
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('timestamp, start and end must be non-negative safe integers');
  if (m.hash.length !== HASH_SIZE) throw new TypeError('the subtree hash must be 32 bytes');
  const out = new Uint8Array(SUBTREE_LABEL.length + 1 + name.length + 8 + 1 + origin.length + 16 + HASH_SIZE);
  const view = new DataView(out.buffer);
  let at = 0;
  out.set(SUBTREE_LABEL, at);
  at += SUBTREE_LABEL.length;
  out[at++] = name.length;
  out.set(name, at);
  at += name.length;
  view.setBigUint64(at, BigInt(m.timestamp));
  at += 8;
  out[at++] = origin.length;
  out.set(origin, at);
  at += origin.length;
  view.setBigUint64(at, BigInt(m.start));
  view.setBigUint64(at + 8, BigInt(m.end));
  out.set(m.hash, at + 16);
  return out;
}

/**
 * A witness key, parsed: an Ed25519 cosignature/v1 verifier key (type 0x04) or an ML-DSA-44 one
 * (type 0x06). Throws TypeError on anything else.
 */
export function parseWitnessKey(vkey: string): VerifierKey {
  const key = parseVerifierKey(vkey);
  if (key.alg !== COSIGNATURE_ALG && key.alg !== MLDSA_COSIGNATURE_ALG)
    throw new TypeError(`witness key ${key.name} is not a witness cosignature key (type 0x04 Ed25519 or 0x06 ML-DSA-44)`);
  return key;
}

/** The witness's signature scheme, for people: "Ed25519" or "ML-DSA-44". */
export const witnessKeyKind = (key: VerifierKey): string => (key.alg === MLDSA_COSIGNATURE_ALG ? 'ML-DSA-44' : 'Ed25519');

/** A cosignature line for `checkpointText` (the witness side; tests and tools). */
export function cosign(
  checkpointText: string,
  witness: { name: string; publicKey: Uint8Array; secretKey: Uint8Array },
  timestamp: number,
): string {
  const sig = edSign(cosignedMessage(checkpointText, timestamp), witness.secretKey);
  const blob = new Uint8Array(72);
  new DataView(blob.buffer).setBigUint64(0, BigInt(timestamp));
  blob.set(sig, 8);
  return formatSignatureLine(witness.name, noteKeyHash(witness.name, witness.publicKey, COSIGNATURE_ALG), blob);
}

/**
 * The timestamp of `sig` when it is a valid cosignature by `witness` over `checkpointText` (the
 * cosignature type the witness key's type names), else null (another key, a malformed blob, a bad
 * signature, a checkpoint that does not parse).
 */
export function cosignatureTime(checkpointText: string, sig: NoteSignature, witness: VerifierKey): number | null {
  if (sig.name !== witness.name || !bytesEqual(sig.keyId, witness.keyId)) return null;
  const mldsa = witness.alg === MLDSA_COSIGNATURE_ALG;
  if (!mldsa && witness.alg !== COSIGNATURE_ALG) return null;
  if (sig.signature.length !== 8 + (mldsa ? MLDSA44_SIGNATURE_BYTES : 64)) return null;
  const t = new DataView(sig.signature.buffer, sig.signature.byteOffset, 8).getBigUint64(0);
  if (t > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const timestamp = Number(t);
  const signature = sig.signature.slice(8);
  if (!mldsa) return edVerify(signature, cosignedMessage(checkpointText, timestamp), witness.publicKey) ? timestamp : null;
  let message: Uint8Array;
  try {
    // A checkpoint is the subtree [0, size); its extension lines are not signed (and no statement on them).
    const cp = parseCheckpoint(checkpointText);
    message = subtreeCosignedMessage({ cosigner: witness.name, timestamp, origin: cp.origin, start: 0, end: cp.size, hash: cp.rootHash });
  } catch {
    return null;
  }
  return verifyMlDsa44(signature, message, witness.publicKey) ? timestamp : null;
}

export interface WitnessCount {
  /** Distinct witnesses (by verifier key) with a valid cosignature on the note. */
  valid: Array<{ vkey: string; name: string; timestamp: number }>;
  /** Given witnesses without one, and why. */
  missing: Array<{ vkey: string; name: string; reason: string }>;
}

/** Which of `witnesses` (verifier keys) cosigned `note` validly; each counts once however many lines it has. */
export function countCosignatures(note: string, witnesses: ReadonlyArray<string>): WitnessCount {
  const { text, signatures } = splitNote(note);
  const out: WitnessCount = { valid: [], missing: [] };
  for (const vkey of new Set(witnesses)) {
    const key = parseWitnessKey(vkey);
    const mine = signatures.filter((s) => s.name === key.name && bytesEqual(s.keyId, key.keyId));
    const times = mine.map((s) => cosignatureTime(text, s, key));
    const good = times.find((t): t is number => t !== null);
    if (good !== undefined) out.valid.push({ vkey, name: key.name, timestamp: good });
    else out.missing.push({ vkey, name: key.name, reason: mine.length === 0 ? 'no cosignature line' : 'its cosignature does not verify' });
  }
  return out;
}
