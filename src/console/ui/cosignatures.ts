// The witness cosignatures a bundle's checkpoint carries (docs/witnessing.md), listed one by one:
// the witness, its signature scheme (Ed25519 or ML-DSA-44), when it cosigned, and whether its cosignature
// verifies under the key the service publishes for it. Pure computation in the page, like the checks above it.
import { parseLogProof } from '@escrow-settlement/protocol/witnessed';
import { cosignatureTime, parseWitnessKey, witnessKeyKind } from '@escrow-settlement/protocol/tlog/cosignature';
import { parseCheckpoint, splitNote, type NoteSignature, type VerifierKey } from '@escrow-settlement/protocol/tlog/checkpoint';
import { bytesEqual } from '@escrow-settlement/protocol/tlog/hash';
import { badge, h, section, table } from './dom.ts';

export interface PublishedWitness {
  name: string;
  vkey: string;
}

// Both cosignature types start with the u64 timestamp: 8 + 64 bytes (Ed25519) or 8 + 2420 (ML-DSA-44).
const timeOf = (sig: Uint8Array) =>
  sig.length === 72 || sig.length === 2428
    ? new Date(Number(new DataView(sig.buffer, sig.byteOffset, 8).getBigUint64(0)) * 1000).toISOString()
    : '—';

/** The published key a line is by: same name and key ID (one witness may publish both key types). */
function keyOf(s: NoteSignature, published: PublishedWitness[]): VerifierKey | 'unreadable' | null {
  let unreadable = false;
  for (const p of published.filter((w) => w.name === s.name)) {
    try {
      const key = parseWitnessKey(p.vkey);
      if (bytesEqual(key.keyId, s.keyId)) return key;
    } catch {
      unreadable = true;
    }
  }
  return unreadable ? 'unreadable' : null;
}

/** `bundle` is any parsed JSON (a pasted bundle): without a logProof string there is nothing to list. */
export function cosignatureList(bundle: unknown, published: PublishedWitness[]): HTMLElement | null {
  if (typeof bundle !== 'object' || bundle === null || !('logProof' in bundle) || typeof bundle.logProof !== 'string') return null;
  let note: string;
  let origin: string;
  try {
    note = parseLogProof(bundle.logProof).checkpoint;
    origin = parseCheckpoint(splitNote(note).text).origin;
  } catch (err) {
    return section('Witness cosignatures', h('p', { class: 'warn' }, `The bundle's checkpoint cannot be read: ${(err as Error).message}`));
  }
  const { text, signatures } = splitNote(note);
  const cosigs = signatures.filter((s) => s.name !== origin);
  if (cosigs.length === 0)
    return section('Witness cosignatures', h('p', { 'data-testid': 'cosignatures' }, 'The checkpoint carries no witness cosignature.'));
  const rows = cosigs.map((s) => {
    const key = keyOf(s, published);
    let status: Node | string = 'not a witness key this service lists';
    if (key === 'unreadable') status = 'the published key cannot be read';
    else if (key)
      status = badge(cosignatureTime(text, s, key) !== null, 'verifies under its published key', 'does not verify under its published key');
    const kind = key && key !== 'unreadable' ? witnessKeyKind(key) : '—';
    return [h('span', { 'data-cosigner': s.name }, s.name), kind, timeOf(s.signature), status];
  });
  return section(
    'Witness cosignatures',
    h(
      'p',
      null,
      "Each witness cosigned this checkpoint after checking it extends every checkpoint it cosigned before. Pin the witnesses you rely on with the CLI (--witness, --quorum) for a check that does not trust this page's list.",
    ),
    h('div', { 'data-testid': 'cosignatures' }, table(['witness', 'signature', 'cosigned at', 'cosignature'], rows)),
  );
}
