// The log page's witnesses (docs/witnessing.md): each configured witness with the last size it
// cosigned, and why its last submission failed, if it did.
import type { WitnessState } from '@escrow-settlement/protocol/types';
import { api } from '../api.ts';
import { badge, h, section, short, table, when } from '../dom.ts';

export async function witnessesSection(): Promise<HTMLElement> {
  let data: { quorum: number; witnesses: WitnessState[] };
  try {
    data = await api.log.witnesses();
  } catch {
    return section('Witnesses', h('p', null, 'The witness list could not be read.'));
  }
  if (data.witnesses.length === 0) {
    return section(
      'Witnesses',
      h(
        'p',
        { 'data-testid': 'witnesses' },
        'No witnesses are configured: the checkpoint is signed by the issuer alone (see /.well-known/tlog-policy).',
      ),
    );
  }
  return section(
    `Witnesses (quorum ${data.quorum} of ${data.witnesses.length})`,
    h(
      'div',
      { 'data-testid': 'witnesses' },
      table(
        ['witness', 'key', 'last cosigned size', 'cosigned', 'state'],
        data.witnesses.map((w) => [
          h('span', { 'data-witness': w.name }, w.name),
          short(w.vkey, 24),
          h('span', { 'data-testid': `cosigned-${w.name}` }, w.cosignedSize === null ? 'none yet' : String(w.cosignedSize)),
          when(w.cosignedAt ?? undefined),
          w.failures > 0
            ? h('span', { title: w.lastError ?? '' }, badge(false, '', `failing (${w.failures}): ${w.lastError ?? ''}`))
            : badge(true, 'ok'),
        ]),
      ),
    ),
  );
}
