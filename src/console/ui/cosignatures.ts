// The witness cosignatures a bundle's checkpoint carries (docs/witnessing.md), listed one by one:
// the witness, when it cosigned, and whether its cosignature/v1 verifies under the key the service
// publishes for it. Pure computation in the page, like the checks above it.
import { parseLogProof } from '@escrow-settlement/protocol/witnessed';
import { cosignatureTime, parseWitnessKey } from '@escrow-settlement/protocol/tlog/cosignature';
import { parseCheckpoint, splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { badge, h, section, table } from './dom.ts';

export interface PublishedWitness {
  name: string;
  vkey: string;
}

const timeOf = (sig: Uint8Array) =>
  sig.length === 72 ? new Date(Number(new DataView(sig.buffer, sig.byteOffset, 8).getBigUint64(0)) * 1000).toISOString() : '—';

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
    const w = published.find((p) => p.name === s.name);
    let status: Node | string = 'not a witness this service lists';
    if (w) {
      try {
        status = badge(
          cosignatureTime(text, s, parseWitnessKey(w.vkey)) !== null,
          'verifies under its published key',
          'does not verify under its published key',
        );
      } catch {
        status = 'the published key cannot be read';
      }
    }
    return [h('span', { 'data-cosigner': s.name }, s.name), timeOf(s.signature), status];
  });
  return section(
    'Witness cosignatures',
    h(
      'p',
      null,
      "Each witness cosigned this checkpoint after checking it extends every checkpoint it cosigned before. Pin the witnesses you rely on with the CLI (--witness, --quorum) for a check that does not trust this page's list.",
    ),
    h('div', { 'data-testid': 'cosignatures' }, table(['witness', 'cosigned at', 'cosignature/v1'], rows)),
  );
}
