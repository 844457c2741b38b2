// A leaf's inclusion path drawn from the leaf up to the root: at each level the node computed so far,
// the audit-path sibling beside it (left or right, RFC 9162 §2.1.3.2) and their parent, recomputed here.
import { nodeHash } from '@escrow-settlement/protocol/tlog/hash';
import { walkAuditPath } from '@escrow-settlement/protocol/tlog/verify';
import type { Inclusion } from '@escrow-settlement/protocol/types';
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { badge, h, s } from '../dom.ts';

interface Step {
  sibling: string;
  siblingLeft: boolean;
  parent: string;
}

/** rootFromInclusionProof's walk, keeping each level so it can be drawn. */
export function inclusionSteps(leafHash: string, index: number, size: number, path: string[]): { steps: Step[]; root: string | null } {
  const steps: Step[] = [];
  if (index >= size) return { steps, root: null };
  let r = fromHex(leafHash);
  const fits = walkAuditPath(index, size - 1, path, (p, left) => {
    const sib = fromHex(p);
    r = left ? nodeHash(sib, r) : nodeHash(r, sib);
    steps.push({ sibling: p, siblingLeft: left, parent: toHex(r) });
  });
  return { steps, root: fits ? toHex(r) : null };
}

const cut = (x: string) => `${x.slice(0, 12)}…`;

export function inclusionDrawing(p: Omit<Inclusion, 'head'> & { proofId: string }): HTMLElement {
  const { steps, root } = inclusionSteps(p.leafHash, p.leafIndex, p.logSize, p.auditPath);
  const ok = root === p.rootHash;
  const rowH = 64;
  const height = (steps.length + 1) * rowH + 20;
  const y = (level: number) => height - 30 - level * rowH;
  const box = (x: number, yy: number, label: string, cls: string, title: string) =>
    s(
      'g',
      { class: `tnode ${cls}` },
      s('title', null, title),
      s('rect', { x: x - 100, y: yy - 14, width: 200, height: 28, rx: 6 }),
      s('text', { x, y: yy + 5, 'text-anchor': 'middle' }, label),
    );
  const parts: SVGElement[] = [box(360, y(0), `leaf ${p.leafIndex}: ${cut(p.leafHash)}`, 'path', `leaf hash ${p.leafHash}`)];
  steps.forEach((st, i) => {
    const sx = st.siblingLeft ? 110 : 610;
    parts.push(s('line', { x1: 360, y1: y(i) - 14, x2: 360, y2: y(i + 1) + 14, class: 'tedge path' }));
    parts.push(s('line', { x1: sx, y1: y(i) - 14, x2: 360, y2: y(i + 1) + 14, class: 'tedge' }));
    parts.push(
      box(sx, y(i), `sibling ${cut(st.sibling)}`, 'sibling', `audit path[${i}] ${st.sibling} (${st.siblingLeft ? 'left' : 'right'})`),
    );
    const last = i === steps.length - 1;
    parts.push(
      box(
        360,
        y(i + 1),
        `${last ? 'root' : 'node'} ${cut(st.parent)}`,
        last ? (ok ? 'path root ok' : 'path root bad') : 'path',
        `${last ? 'recomputed root' : 'node'} ${st.parent}`,
      ),
    );
  });
  const svg = s(
    'svg',
    {
      viewBox: `0 0 720 ${height}`,
      class: 'tree',
      role: 'img',
      'aria-label': `Inclusion path of leaf ${p.leafIndex} in a ${p.logSize}-leaf log: ${steps.length} sibling hashes up to the root`,
    },
    parts,
  );
  return h(
    'figure',
    { class: 'inclusion', 'data-testid': 'inclusion' },
    svg as unknown as HTMLElement,
    h(
      'figcaption',
      null,
      badge(ok, 'root recomputed here equals rootHash', 'recomputed root differs from rootHash'),
      ` Leaf ${p.leafIndex} of ${p.logSize} (proof ${p.proofId}); root `,
      h('code', { title: p.rootHash }, cut(p.rootHash)),
      '.',
    ),
  );
}
