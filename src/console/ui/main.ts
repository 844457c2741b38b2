// The console's entry: layout, hash routing and, in hosted mode, the key gate. Each view renders
// into <main> and may return a cleanup (its polling timer) that runs when the user navigates away.
import { ApiError, api, forgetKey, getKey, hosted, setKey } from './api.ts';
import { errorBox, h, mount } from './dom.ts';
import { escrowListView } from './views/escrows.ts';
import { escrowView } from './views/escrow.ts';
import { verifyView } from './views/verify.ts';
import { logView } from './views/log.ts';
import { webhooksView } from './views/webhooks.ts';
import { sandboxView } from './views/sandbox.ts';
import { onRefresh } from './refresh.ts';

export type View = (main: HTMLElement, params: Record<string, string>, query: URLSearchParams) => Promise<(() => void) | void>;

interface Route {
  pattern: RegExp;
  view: View;
  title: string;
  nav?: string;
  open?: boolean;
  sandbox?: boolean;
}
const ROUTES: Route[] = [
  { pattern: /^\/(?:escrows)?$/, view: escrowListView, title: 'Escrows', nav: '/escrows' },
  { pattern: /^\/escrows\/(?<id>[^/]+)$/, view: escrowView, title: 'Escrow' },
  // Verification is offline: it needs no key, so it stays open in hosted mode.
  { pattern: /^\/verify$/, view: verifyView, title: 'Verify', nav: '/verify', open: true },
  { pattern: /^\/log$/, view: logView, title: 'Log', nav: '/log' },
  { pattern: /^\/webhooks$/, view: webhooksView, title: 'Webhooks', nav: '/webhooks' },
  { pattern: /^\/sandbox$/, view: sandboxView, title: 'Sandbox', nav: '/sandbox', sandbox: true },
];

let cleanup: (() => void) | void;

function layout(): HTMLElement {
  const app = document.getElementById('app')!;
  const nav = h(
    'nav',
    { 'aria-label': 'Console' },
    h(
      'ul',
      null,
      ROUTES.filter((r) => r.nav && !(r.sandbox && hosted())).map((r) =>
        h('li', null, h('a', { href: `#${r.nav}`, 'data-nav': r.nav }, r.title)),
      ),
    ),
  );
  const main = h('main', { id: 'main', tabindex: -1 });
  const right = h(
    'div',
    { class: 'mode' },
    h('span', { class: hosted() ? 'pill key' : 'pill' }, hosted() ? 'hosted' : 'sandbox'),
    hosted() && getKey()
      ? h(
          'button',
          {
            type: 'button',
            class: 'link',
            onclick: () => {
              forgetKey();
              location.reload();
            },
          },
          'Forget key',
        )
      : null,
    h('a', { href: '/docs' }, 'API reference'),
  );
  mount(app, h('header', { class: 'top' }, h('a', { class: 'brand', href: '#/escrows' }, 'Escrow settlement'), nav, right), main);
  return main;
}

/** Hosted mode without a key: ask for one and check it before keeping it (sessionStorage only). */
function keyGate(main: HTMLElement) {
  const input = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const msg = h('p', { role: 'alert', class: 'error', 'data-testid': 'key-error' });
  const form = h(
    'form',
    { class: 'card', 'data-testid': 'key-gate' },
    h('label', { for: 'api-key' }, 'API key'),
    input,
    h('p', { class: 'hint' }, 'Kept in this tab only (sessionStorage); closing the tab forgets it.'),
    h('button', { type: 'submit' }, 'Use this key'),
    msg,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setKey(input.value.trim());
    try {
      await api.escrows.list({ limit: 1 });
      void render();
    } catch (err) {
      forgetKey();
      msg.textContent =
        err instanceof ApiError && err.status === 401
          ? 'That key was refused (401 unauthorized).'
          : `Could not check the key: ${(err as Error).message}`;
    }
  });
  mount(
    main,
    h('h1', null, 'This console needs an API key'),
    h(
      'p',
      null,
      'This deployment is hosted: every API call needs a bearer key. Nothing is shown without one. ',
      h('a', { href: '#/verify' }, 'Offline verification'),
      ' works without a key.',
    ),
    form,
  );
  input.focus();
}

async function render() {
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  const raw = location.hash.replace(/^#/, '') || '/escrows';
  const [path, qs] = raw.split('?');
  const main = layout();
  const route = ROUTES.find((r) => r.pattern.test(path));
  for (const a of document.querySelectorAll<HTMLAnchorElement>('[data-nav]')) {
    if (route && path.startsWith(a.dataset.nav!)) a.setAttribute('aria-current', 'page');
  }
  if (!route || (route.sandbox && hosted())) {
    document.title = 'Not found · Escrow settlement console';
    mount(
      main,
      h('h1', null, 'Not found'),
      h('p', null, 'No console page at ', h('code', null, path), '. ', h('a', { href: '#/escrows' }, 'Escrows')),
    );
    return;
  }
  const params = (route.pattern.exec(path)!.groups ?? {}) as Record<string, string>;
  // The title names the page, and on a detail page the thing shown (a tab list of escrows tells them apart).
  document.title = `${route.title}${params.id ? ` ${params.id}` : ''} · Escrow settlement console`;
  if (hosted() && !getKey() && !route.open) return keyGate(main);
  try {
    cleanup = await route.view(main, params, new URLSearchParams(qs ?? ''));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && hosted()) {
      forgetKey();
      return keyGate(main);
    }
    main.append(errorBox(err));
  }
}

onRefresh(render);

/** Moves focus to the new page's heading region so keyboard and screen-reader users land on it. */
window.addEventListener('hashchange', () => void render().then(() => document.getElementById('main')?.focus()));
void render();
