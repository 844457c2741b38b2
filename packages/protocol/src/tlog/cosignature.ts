// Witness cosignatures (c2sp.org/tlog-cosignature, cosignature/v1): a witness's Ed25519 signature over
// "cosignature/v1\ntime <T>\n" followed by the checkpoint text, carried as a signed-note line whose
// blob is keyID (4) || timestamp (8, big-endian seconds) || signature (64), key type 0x04.
import { sign as edSign, verify as edVerify } from '../crypto/ed25519.ts';
import {
  COSIGNATURE_ALG,
  formatSignatureLine,
  noteKeyHash,
  parseVerifierKey,
  splitNote,
  type NoteSignature,
  type VerifierKey,
} from './checkpoint.ts';
import { bytesEqual } from './hash.ts';

const utf8 = new TextEncoder();

/** The bytes a cosignature/v1 signs: the header lines, then the checkpoint text (note body) as is. */
export function cosignedMessage(checkpointText: string, timestamp: number): Uint8Array {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError('cosignature timestamp must be a non-negative safe integer');
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${checkpointText}`);
}

/** A witness key: a cosignature/v1 verifier key (type 0x04), parsed. Throws TypeError on anything else. */
export function parseWitnessKey(vkey: string): VerifierKey {
  const key = parseVerifierKey(vkey);
  if (key.alg !== COSIGNATURE_ALG) throw new TypeError(`witness key ${key.name} is not a cosignature/v1 key (type 0x04)`);
  return key;
}

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
 * The timestamp of `sig` when it is a valid cosignature/v1 by `witness` over `checkpointText`, else
 * null (another key, a malformed blob, a bad signature).
 */
export function cosignatureTime(checkpointText: string, sig: NoteSignature, witness: VerifierKey): number | null {
  if (sig.name !== witness.name || !bytesEqual(sig.keyId, witness.keyId) || sig.signature.length !== 72) return null;
  const t = new DataView(sig.signature.buffer, sig.signature.byteOffset, 8).getBigUint64(0);
  if (t > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const timestamp = Number(t);
  return edVerify(sig.signature.slice(8), cosignedMessage(checkpointText, timestamp), witness.publicKey) ? timestamp : null;
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
