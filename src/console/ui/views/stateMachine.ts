// The escrow state machine (src/escrow/states.ts) drawn as SVG: every state and transition, the path
// this escrow took (from its trail) highlighted, and its current state marked.
import { h, s } from '../dom.ts';

type Pos = Record<string, [number, number]>;
/** A drawing of the machine: its id and its viewBox size. */
type Layout = { id: 'w' | 'n'; size: [number, number] };
/** A transition's label in one drawing: text (\n breaks a line), offset x, offset y (from the edge's middle), text-anchor. */
type Label = [text: string, dx: number, dy: number, anchor: string];

/**
 * Two drawings. Wide screens: left to right, 920 units wide. Narrow screens (a phone, 390 px): top to
 * bottom, 360 units wide, so the text keeps about its size instead of shrinking with a 920-unit
 * drawing to a third of it.
 */
const WIDE: Layout = { id: 'w', size: [920, 200] };
const NARROW: Layout = { id: 'n', size: [360, 480] };

/** Each state once, with its box centre in the wide and in the narrow drawing. */
const STATES: Record<string, Record<Layout['id'], [number, number]>> = {
  created: { w: [60, 40], n: [80, 30] },
  funded: { w: [250, 40], n: [80, 120] },
  delivered: { w: [440, 40], n: [80, 230] },
  settled: { w: [670, 40], n: [80, 340] },
  refunded: { w: [250, 165], n: [270, 120] },
  disputed: { w: [670, 165], n: [270, 340] },
  resolved: { w: [850, 165], n: [270, 450] },
};

/** Each transition once: from, to, and its label in the wide and in the narrow drawing (a label wider than its arrow breaks into lines). */
const TRANSITIONS: Array<[from: string, to: string, wide: Label, narrow: Label]> = [
  ['created', 'funded', ['fund', 0, -7, 'middle'], ['fund', 8, 4, 'start']],
  ['funded', 'delivered', ['deliver', 0, -7, 'middle'], ['deliver', 8, 4, 'start']],
  ['delivered', 'settled', ['verdict passed', 0, -7, 'middle'], ['verdict passed', 8, 4, 'start']],
  ['funded', 'refunded', ['refund / timeout', -8, 4, 'end'], ['refund /\ntimeout', 0, -19, 'middle']],
  ['delivered', 'refunded', ['failed: refund / timeout', 6, 4, 'start'], ['failed: refund /\ntimeout', 20, 30, 'start']],
  ['delivered', 'disputed', ['failed: dispute', 14, 4, 'start'], ['failed:\ndispute', 14, -24, 'start']],
  ['disputed', 'resolved', ['ruling /\ntimeout', 0, -19, 'middle'], ['ruling /\ntimeout', 8, -2, 'start']],
];
const W = 100;
const H = 36;
const LINE = 12;

/** The states this escrow passed through, read from its trail's events, ending in its current state. */
export function pathTaken(events: string[], current: string): string[] {
  const path = ['created'];
  const step = (st: string) => {
    if (path[path.length - 1] !== st) path.push(st);
  };
  for (const e of events) {
    if (e === 'escrow.funded') step('funded');
    else if (e === 'delivery.submitted') step('delivered');
    else if (e === 'dispute.opened') step('disputed');
  }
  step(current);
  return path;
}

function edgeLine(pos: Pos, from: string, to: string): [number, number, number, number] {
  const [x1, y1] = pos[from];
  const [x2, y2] = pos[to];
  // Leave and enter at the box edges, along the line between centres.
  const dx = x2 - x1;
  const dy = y2 - y1;
  const t = (w: number, h2: number) =>
    Math.min(Math.abs(dx) > 0 ? w / 2 / Math.abs(dx) : Infinity, Math.abs(dy) > 0 ? h2 / 2 / Math.abs(dy) : Infinity);
  const k = t(W + 8, H + 8);
  return [x1 + dx * k, y1 + dy * k, x2 - dx * k, y2 - dy * k];
}

function drawing(layout: Layout, path: string[], current: string, taken: Set<string>, visited: Set<string>): SVGElement {
  const { id, size } = layout;
  const pos: Pos = Object.fromEntries(Object.entries(STATES).map(([st, at]) => [st, at[id]]));
  const edges = TRANSITIONS.map(([a, b, wide, narrow]) => [a, b, ...(id === 'w' ? wide : narrow)] as const);
  const arrow = `arrow-${id}`;
  return s(
    'svg',
    {
      viewBox: `0 0 ${size[0]} ${size[1]}`,
      class: `machine machine-${id === 'w' ? 'wide' : 'narrow'}`,
      role: 'img',
      'aria-labelledby': `sm-title-${id}`,
    },
    s('title', { id: `sm-title-${id}` }, `State machine. Path taken: ${path.join(' → ')}. Current state: ${current}.`),
    s(
      'defs',
      null,
      s(
        'marker',
        { id: arrow, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }),
      ),
      s(
        'marker',
        { id: `${arrow}-taken`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead taken' }),
      ),
    ),
    edges.map(([a, b, label, dx, dy, anchor]) => {
      const [x1, y1, x2, y2] = edgeLine(pos, a, b);
      const on = taken.has(`${a}>${b}`);
      const x = (x1 + x2) / 2 + dx;
      const lines = label.split('\n');
      return s(
        'g',
        { class: on ? 'edge taken' : 'edge', 'data-edge': `${a}>${b}` },
        s('line', { x1, y1, x2, y2, 'marker-end': on ? `url(#${arrow}-taken)` : `url(#${arrow})` }),
        s(
          'text',
          { x, y: (y1 + y2) / 2 + dy, 'text-anchor': anchor },
          lines.map((text, i) => s('tspan', { x, dy: i === 0 ? 0 : LINE }, text)),
        ),
      );
    }),
    Object.entries(pos).map(([st, [x, y]]) =>
      s(
        'g',
        { class: `node${visited.has(st) ? ' visited' : ''}${st === current ? ' current' : ''}`, 'data-state': st },
        s('rect', { x: x - W / 2, y: y - H / 2, width: W, height: H, rx: 8 }),
        s('text', { x, y: y + 5, 'text-anchor': 'middle' }, st === current ? `● ${st}` : st),
      ),
    ),
  );
}

/** Both drawings; the stylesheet shows the one that fits the screen (the other is display: none, so hidden from assistive technology too). */
export function stateMachine(path: string[], current: string): HTMLElement {
  const taken = new Set(path.slice(1).map((st, i) => `${path[i]}>${st}`));
  const visited = new Set(path);
  return h(
    'figure',
    { class: 'machine-wrap' },
    drawing(WIDE, path, current, taken, visited) as unknown as HTMLElement,
    drawing(NARROW, path, current, taken, visited) as unknown as HTMLElement,
    h('figcaption', null, 'Path taken: ', h('strong', { 'data-testid': 'path-taken' }, path.join(' → ')), `; now ${current}.`),
  );
}
