// Whom to trust: the issuer document (GET /.well-known/proof-issuer.json) a caller fetched once and
// pinned, each key's C2SP verifier key (`vkey`, c2sp.org/signed-note), and checking the log's
// checkpoint (GET /v1/log/checkpoint, c2sp.org/tlog-checkpoint) against one. Web APIs only.
import { fromHex, isHex64, toHex } from './crypto/bytes.ts';
import { verify } from './crypto/ed25519.ts';
import { ED25519_ALG, formatVerifierKey, parseCheckpoint, parseVerifierKey, verifyNote, type Checkpoint } from './tlog/checkpoint.ts';
import type { IssuerKey } from './types.ts';

/** The issuer document: every key era, oldest first; each key with its C2SP verifier key. */
export interface IssuerDocument {
  keys: IssuerKey[];
}

/**
 * The C2SP note verifier key of an issuer key under the log's origin:
 * `<origin>+<hex key hash>+<base64(0x01 ‖ key)>`, key hash = SHA-256(origin ‖ "\n" ‖ 0x01 ‖ key)[:4].
 * It is what Go's `note.NewVerifier` and witnesses take to check the log's checkpoints.
 */
export function issuerVkey(origin: string, publicKeyHex: string): string {
  if (!isHex64(publicKeyHex)) throw new TypeError('publicKey must be 64 lowercase hex characters');
  return formatVerifierKey(origin, fromHex(publicKeyHex, 'publicKey'));
}

/**
 * The keys of an issuer document, checked: a non-empty `keys` array of Ed25519 keys with a keyId,
 * a 64-hex publicKey and validFrom; a `vkey`, when present, must encode that same public key.
 * Throws a TypeError naming the first field that is wrong.
 */
export function issuerDocumentKeys(doc: unknown): IssuerKey[] {
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (typeof doc !== 'object' || doc === null || !Array.isArray(keys))
    throw new TypeError('the issuer document must be an object with a keys array');
  if (keys.length === 0) throw new TypeError('the issuer document has no keys');
  return keys.map((k: Partial<IssuerKey> | null, i) => {
    const at = `keys[${i}]`;
    if (typeof k !== 'object' || k === null) throw new TypeError(`${at} must be an object`);
    if (typeof k.keyId !== 'string' || k.keyId === '') throw new TypeError(`${at}.keyId must be a non-empty string`);
    if (k.alg !== 'ed25519') throw new TypeError(`${at}.alg must be "ed25519"`);
    if (!isHex64(k.publicKey)) throw new TypeError(`${at}.publicKey must be 64 lowercase hex characters`);
    if (typeof k.validFrom !== 'string') throw new TypeError(`${at}.validFrom must be a timestamp`);
    if (k.vkey !== undefined) {
      let pub: string;
      try {
        pub = toHex(parseVerifierKey(String(k.vkey)).publicKey);
      } catch (e) {
        throw new TypeError(`${at}.vkey is not a C2SP verifier key: ${(e as Error).message}`);
      }
      if (pub !== k.publicKey) throw new TypeError(`${at}.vkey encodes another key than ${at}.publicKey`);
    }
    return k as IssuerKey;
  });
}

export interface CheckpointResult {
  ok: boolean;
  detail: string;
  /** The parsed checkpoint when its signature verified. */
  checkpoint?: Required<Checkpoint>;
}

/**
 * Verifies a C2SP checkpoint note with a verifier key (an issuer key's `vkey`): the note carries a
 * signature by that key that verifies, and the checkpoint's origin is the key's name.
 * A malformed vkey throws a TypeError; a malformed or unsigned note is `ok: false`.
 */
export function verifyCheckpoint(note: string, vkey: string): CheckpointResult {
  const key = parseVerifierKey(vkey);
  if (key.alg !== ED25519_ALG) throw new TypeError('the verifier key is not an Ed25519 note key (type 0x01)');
  let text: string;
  let verified: boolean;
  try {
    ({ text, verified } = verifyNote(note, { name: key.name, publicKey: key.publicKey, verify }));
  } catch (e) {
    return { ok: false, detail: `the note is malformed: ${(e as Error).message}` };
  }
  if (!verified) return { ok: false, detail: `the note carries no valid signature by ${key.name} with key hash ${toHex(key.keyId)}` };
  let checkpoint: Required<Checkpoint>;
  try {
    checkpoint = parseCheckpoint(text);
  } catch (e) {
    return { ok: false, detail: `the signed text is not a checkpoint: ${(e as Error).message}` };
  }
  if (checkpoint.origin !== key.name)
    return { ok: false, detail: `the checkpoint's origin ${checkpoint.origin} is not the key's name ${key.name}` };
  return { ok: true, detail: `checkpoint of ${checkpoint.size} leaves signed by ${key.name}`, checkpoint };
}
