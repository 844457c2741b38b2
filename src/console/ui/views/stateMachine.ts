// The escrow state machine (src/escrow/states.ts) drawn as SVG: every state and transition, the path
// this escrow took (from its trail) highlighted, and its current state marked.
import { h, s } from '../dom.ts';

const POS: Record<string, [number, number]> = {
  created: [60, 40], funded: [250, 40], delivered: [440, 40], settled: [670, 40],
  refunded: [250, 165], disputed: [670, 165], resolved: [850, 165],
};
/** from, to, label, label offset x, text-anchor. */
const EDGES: Array<[string, string, string, number, string]> = [
  ['created', 'funded', 'fund', 0, 'middle'], ['funded', 'delivered', 'deliver', 0, 'middle'], ['delivered', 'settled', 'verdict passed', 0, 'middle'],
  ['funded', 'refunded', 'refund / timeout', -8, 'end'], ['delivered', 'refunded', 'failed: refund / timeout', 6, 'start'],
  ['delivered', 'disputed', 'failed: dispute', 14, 'start'], ['disputed', 'resolved', 'ruling / timeout', 0, 'middle'],
];
const W = 100;
const H = 36;

/** The states this escrow passed through, read from its trail's events, ending in its current state. */
export function pathTaken(events: string[], current: string): string[] {
  const path = ['created'];
  const step = (st: string) => { if (path[path.length - 1] !== st) path.push(st); };
  for (const e of events) {
    if (e === 'escrow.funded') step('funded');
    else if (e === 'delivery.submitted') step('delivered');
    else if (e === 'dispute.opened') step('disputed');
  }
  step(current);
  return path;
}

function edgeLine(from: string, to: string): [number, number, number, number] {
  const [x1, y1] = POS[from];
  const [x2, y2] = POS[to];
  // Leave and enter at the box edges, along the line between centres.
  const dx = x2 - x1;
  const dy = y2 - y1;
  const t = (w: number, h2: number) => Math.min(Math.abs(dx) > 0 ? w / 2 / Math.abs(dx) : Infinity, Math.abs(dy) > 0 ? h2 / 2 / Math.abs(dy) : Infinity);
  const k = t(W + 8, H + 8);
  return [x1 + dx * k, y1 + dy * k, x2 - dx * k, y2 - dy * k];
}

export function stateMachine(path: string[], current: string): HTMLElement {
  const taken = new Set(path.slice(1).map((st, i) => `${path[i]}>${st}`));
  const visited = new Set(path);
  const svg = s('svg', { viewBox: '0 0 920 200', class: 'machine', role: 'img', 'aria-labelledby': 'sm-title' },
    s('title', { id: 'sm-title' }, `State machine. Path taken: ${path.join(' → ')}. Current state: ${current}.`),
    s('defs', null,
      s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' })),
      s('marker', { id: 'arrow-taken', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead taken' }))),
    EDGES.map(([a, b, label, dx, anchor]) => {
      const [x1, y1, x2, y2] = edgeLine(a, b);
      const on = taken.has(`${a}>${b}`);
      return s('g', { class: on ? 'edge taken' : 'edge' },
        s('line', { x1, y1, x2, y2, 'marker-end': on ? 'url(#arrow-taken)' : 'url(#arrow)' }),
        s('text', { x: (x1 + x2) / 2 + dx, y: (y1 + y2) / 2 - (y1 === y2 ? 7 : -4), 'text-anchor': anchor }, label));
    }),
    Object.entries(POS).map(([st, [x, y]]) =>
      s('g', { class: `node${visited.has(st) ? ' visited' : ''}${st === current ? ' current' : ''}`, 'data-state': st },
        s('rect', { x: x - W / 2, y: y - H / 2, width: W, height: H, rx: 8 }),
        s('text', { x, y: y + 5, 'text-anchor': 'middle' }, st === current ? `● ${st}` : st))));
  return h('figure', { class: 'machine-wrap' }, svg as unknown as HTMLElement,
    h('figcaption', null, 'Path taken: ', h('strong', { 'data-testid': 'path-taken' }, path.join(' → ')), `; now ${current}.`));
}
