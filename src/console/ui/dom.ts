// A tiny hyperscript over the DOM: the console's only rendering primitive (no framework, no innerHTML,
// so nothing from the API is ever parsed as markup).
type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s(tag: string, attrs: Attrs | null = null, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs | null) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, '').toLowerCase(), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function append(el: Node, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function mount(el: Element, ...children: Child[]) {
  el.replaceChildren();
  append(el, children);
}

/**
 * A hex string shortened for display with an ellipsis. The whole value stays the element's text (the
 * stylesheet cuts it at `n` characters), so selecting and copying it copies all of it, and the title
 * shows it on hover. Widths are classes, not inline styles: the console's CSP allows no style attribute.
 */
export const short = (hex: string, n: 10 | 16 | 24 = 10) => h('code', { title: hex, class: `hex w${n}` }, hex);

/** An id (esc_…, prf_…): never broken inside, cut with an ellipsis where the column is narrow, copied whole. */
export const idText = (id: string) => h('code', { class: 'id', title: id }, id);

export const badge = (ok: boolean, yes = 'pass', no = 'fail') =>
  h('span', { class: ok ? 'badge ok' : 'badge bad' }, ok ? `✓ ${yes}` : `✗ ${no}`);

/** "1 check", "12 checks": a count with its noun agreeing. */
export const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

export const when = (iso: string | undefined) => (iso ? h('time', { datetime: iso }, iso.replace('T', ' ').replace('.000Z', 'Z')) : '—');

/** A labelled section (h2 with an id the region is labelled by). */
let seq = 0;
export function section(title: string, ...children: Child[]): HTMLElement {
  const id = `s${++seq}`;
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

/** A split's shares as a page shows them after the outcome; nothing for another outcome. */
export const sharesText = (shares: { payerBps: number; payeeBps: number } | undefined) =>
  shares ? ` (payer ${shares.payerBps / 100}%, payee ${shares.payeeBps / 100}%)` : '';

/**
 * A one-line form: each field a label and its control (the label names the control by its id), then
 * the submit button (text and test id) and whatever follows it.
 */
export function inlineForm(
  onsubmit: (e: Event) => void,
  fields: Array<[label: string, control: HTMLInputElement | HTMLSelectElement, labelClass?: string]>,
  [text, testId]: [text: string, testId?: string],
  ...after: Child[]
): HTMLFormElement {
  return h(
    'form',
    { class: 'inline', onsubmit },
    fields.map(([label, control, labelClass]) => [h('label', { for: control.id, class: labelClass }, label), control]),
    h('button', { type: 'submit', 'data-testid': testId }, text),
    ...after,
  );
}

/** One fact of a facts list: its term, its description, and attributes for the description (a test id). */
export type Fact = [term: string, description: Child, descriptionAttrs?: Attrs];

/** A definition list of facts, as the detail pages show them; a null fact is left out. */
export function facts(rows: Array<Fact | null>, attrs: Attrs = {}): HTMLDListElement {
  return h(
    'dl',
    { class: 'facts', ...attrs },
    rows.map((f) => f && [h('dt', null, f[0]), h('dd', f[2] ?? null, f[1])]),
  );
}

export function table(head: string[], rows: Child[][], caption?: string): HTMLTableElement {
  return h(
    'table',
    null,
    caption ? h('caption', null, caption) : null,
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        head.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      null,
      // Each cell carries its column's name: on a phone the stylesheet turns a row into a card of
      // `label: value` lines and shows it from there.
      rows.map((r) =>
        h(
          'tr',
          null,
          r.map((c, i) => h('td', { 'data-label': head[i] ?? '' }, c)),
        ),
      ),
    ),
  );
}

export const pre = (v: unknown) => h('pre', { tabindex: 0 }, typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** An API error (or any error) as an alert: `code: message`. */
export function errorBox(err: unknown): HTMLElement {
  const e = err as { code?: string; message?: string };
  return h('p', { role: 'alert', class: 'error' }, e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err));
}
