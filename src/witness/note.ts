// The issuer-signed checkpoint note of any published size (c2sp.org/tlog-checkpoint): what the log
// submits to witnesses. Ed25519 is deterministic and the text is (origin, size, root), so the same
// size and key always give the same note.
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Queryable } from '../db/types.ts';
import { issuerHeadKeys } from '../proof/keys.ts';
import { signedHead } from '../tlog/heads.ts';
import { formatCheckpoint, signNote } from '@escrow-settlement/protocol/tlog/checkpoint';

export async function issuerNoteAt(q: Queryable, origin: string, size?: number): Promise<{ size: number; note: string; text: string }> {
  const head = await signedHead(q, issuerHeadKeys, size);
  const signer = await issuerHeadKeys.signer(q, head.keyId);
  const text = formatCheckpoint({ origin, size: head.logSize, rootHash: fromHex(head.rootHash) });
  const note = signNote(text, { name: origin, publicKey: fromHex(signer.publicKey), sign: (m) => signer.sign(m) });
  return { size: head.logSize, note, text };
}
