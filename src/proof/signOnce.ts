// A proof signed and hashed with one canonicalisation (docs/protocol.md §11.1, §12.1).
//
// The signature covers JCS(proof without `signature`) and the log leaf is SHA-256(0x00 || JCS(proof)).
// Both are the same sorted members, one with the signature member among them: each member's value
// is canonicalised once here and the two texts joined from the pieces, instead of canonicalising the
// whole proof twice (signProof, then proofLeafHash). The full text is also what is stored, so the
// proof is not serialised a third time. test/proof/signOnce.test.ts holds both to the protocol
// package's own functions.
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { sha256 } from '@escrow-settlement/protocol/crypto/hash';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import type { Proof, UnsignedProof } from './proof.ts';

export interface SignedOnce {
  proof: Proof;
  /** JCS(proof), signature included: the stored document and the leaf's preimage. */
  jcs: string;
  /** SHA-256(0x00 || jcs), hex. */
  leafHashHex: string;
}

/** `"key":value` members of an object's canonical form, by key; undefined values omitted (as JCS does). */
function members(obj: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (v === undefined) continue;
    out.push([k, `${canonicalize(k)}:${canonicalize(v)}`]);
  }
  return out;
}

// RFC 8785 §3.2.3: members sorted by their names' UTF-16 code units (the default string order).
const joined = (ms: Array<[string, string]>) =>
  `{${ms
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map((m) => m[1])
    .join(',')}}`;

export function signProofOnce(body: UnsignedProof, key: { publicKey: string; sign(message: Uint8Array): Uint8Array }): SignedOnce {
  const ms = members(body as unknown as Record<string, unknown>);
  const signature = { signer: key.publicKey, signature: toHex(key.sign(utf8(joined([...ms])))) };
  const jcs = joined([...ms, ['signature', `"signature":${canonicalize(signature)}`]]);
  const text = utf8(jcs);
  const preimage = new Uint8Array(text.byteLength + 1); // 0x00: the leaf prefix (RFC 6962 §2.1)
  preimage.set(text, 1);
  return { proof: { ...body, signature }, jcs, leafHashHex: toHex(sha256(preimage)) };
}
