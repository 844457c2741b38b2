// The log's side of c2sp.org/tlog-witness add-checkpoint: the request body, and what an answer
// means. Pure; a cosignature is kept only when it verifies (c2sp.org/tlog-cosignature), so nothing a
// witness sends can put an unchecked line into a served checkpoint.
import { toBase64 } from '@escrow-settlement/protocol/crypto/bytes';
import { cosignatureTime, parseWitnessKey } from '@escrow-settlement/protocol/tlog/cosignature';
import { formatSignatureLine, splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';

/** `old <size>`, the consistency proof lines (base64), an empty line, the signed checkpoint. */
export function addCheckpointBody(old: number, proof: Uint8Array[], note: string): string {
  if (proof.length > 63) throw new RangeError('a consistency proof has at most 63 hashes');
  return `old ${old}\n${proof.map((h) => `${toBase64(h)}\n`).join('')}\n${note}`;
}

export type Answer =
  | { kind: 'cosigned'; line: string; timestamp: number }
  | { kind: 'conflict'; size: number }
  /** A 409 naming a size larger than the log: the witness has cosigned more of this log than this database holds (docs/operations.md §3). */
  | { kind: 'ahead'; size: number }
  /** A 422: the witness found the checkpoint inconsistent with the one it holds (a fork). */
  | { kind: 'inconsistent'; reason: string }
  | { kind: 'failed'; reason: string };

/** At most this much of a witness's answer is read (an Ed25519 cosignature line is ~130 bytes, an ML-DSA-44 one ~3.3 KB). */
export const MAX_ANSWER_BYTES = 16 * 1024;

const short = (s: string) => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);

/**
 * What a witness's answer to the add-checkpoint of `checkpointText` (size `size`, the log at
 * `logSize`) means: a verified cosignature line by `vkey` (re-formatted, so the kept line is
 * canonical), a 409 naming a size to resend from, or a failure and why.
 */
export function interpretAnswer(
  res: { status: number; contentType: string; body: string; oversized?: boolean },
  checkpointText: string,
  vkey: string,
  logSize: number,
): Answer {
  // Said as what it is, not as a parse error of the part that was read.
  if (res.oversized)
    return {
      kind: 'failed',
      reason: `answered ${res.status} with a body over ${MAX_ANSWER_BYTES} bytes, more than any cosignature answer needs: oversized, not read further`,
    };
  if (res.status === 409) {
    const m = /^(0|[1-9][0-9]{0,15})\n?$/.exec(res.body);
    if (!res.contentType.toLowerCase().startsWith('text/x.tlog.size') || !m)
      return { kind: 'failed', reason: `409 without a text/x.tlog.size body (${short(res.body)})` };
    const size = Number(m[1]);
    // More than this database holds: it was restored to an earlier point, or it is a stale standby
    // (or the witness lies; either way nothing may be appended until it is understood).
    if (size > logSize) return { kind: 'ahead', size };
    return { kind: 'conflict', size };
  }
  if (res.status === 422) return { kind: 'inconsistent', reason: `answered 422 (${short(res.body)})` };
  if (res.status !== 200) return { kind: 'failed', reason: `answered ${res.status} (${short(res.body)})` };
  const key = parseWitnessKey(vkey);
  let signatures: ReturnType<typeof splitNote>['signatures'];
  try {
    // tlog-witness: the answer is signature lines; appended to the checkpoint they parse as a note.
    ({ signatures } = splitNote(`${checkpointText}\n${res.body}`));
  } catch (e) {
    return {
      kind: 'failed',
      reason: `answered 200 with something that is not signature lines: ${(e as Error).message} (${short(res.body)})`,
    };
  }
  const mine = signatures.filter((s) => s.name === key.name);
  if (mine.length === 0) return { kind: 'failed', reason: `answered 200 without a cosignature line named ${key.name}` };
  for (const s of mine) {
    const timestamp = cosignatureTime(checkpointText, s, key);
    if (timestamp !== null) return { kind: 'cosigned', line: formatSignatureLine(s.name, s.keyId, s.signature).slice(0, -1), timestamp };
  }
  return {
    kind: 'failed',
    reason: 'answered 200 with a cosignature that does not verify under its key over this checkpoint (another key, or another checkpoint)',
  };
}
