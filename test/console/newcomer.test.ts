// The console as a newcomer first meets it, in a real browser: an empty hosted list offers nothing
// that leads to "Not found"; check names read as words; counts agree with their nouns; the state
// machine's labels fit their arrows and stay readable on a phone; navigating draws no frame around
// the page; the browser's own request for /favicon.ico is answered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const KEY = 'console-newcomer-root-key-0123456789';
const e: Env | null = BROWSER ? await openEnv() : null;
const hostedEnv: Env | null = BROWSER ? await openEnv({ API_KEY: KEY }) : null;

type Box = { x: number; y: number; width: number; height: number };
const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/** Every label and box of the visible state machine, as the screen shows them (CSS px). */
async function machineBoxes(page: Page, svg: string) {
  // No named helper inside the page function: tsx's transform would wrap it in a __name() the page lacks.
  return page.locator(svg).evaluate((el) => ({
    svg: el.getBoundingClientRect().toJSON() as Box,
    labels: [...el.querySelectorAll('.edge text')].map((t) => ({
      text: t.textContent!,
      lines: t.querySelectorAll('tspan').length,
      box: t.getBoundingClientRect().toJSON() as Box,
    })),
    nodes: [...el.querySelectorAll('.node')].map((g) => ({
      state: g.getAttribute('data-state')!,
      rect: g.querySelector('rect')!.getBoundingClientRect().toJSON() as Box,
      text: g.querySelector('text')!.getBoundingClientRect().toJSON() as Box,
    })),
  }));
}

test(
  'hosted mode: an empty escrow list says escrows come from the API, with no demo link (the sandbox page does not exist there)',
  skipNoBrowser,
  async () => {
    const { page } = hostedEnv!;
    await page.goto(`${hostedEnv!.base}/console#/escrows`);
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    const empty = page.locator('p.empty');
    await empty.waitFor();
    assert.match((await empty.textContent()) ?? '', /^No escrows yet\. Escrows are created through the API \(API reference\)\.$/);
    assert.equal(await page.getByText('Create a demo matter').count(), 0);
    assert.equal(await page.locator('a[href="#/sandbox"]').count(), 0);
    assert.equal(await empty.getByRole('link', { name: 'API reference' }).getAttribute('href'), '/docs');
    assert.deepEqual(hostedEnv!.problems, []);
  },
);

// Runs before any test here creates an escrow in the sandbox service.
test('the open sandbox still offers a demo matter from an empty list', skipNoBrowser, async () => {
  const { page } = e!;
  await page.goto(`${e!.base}/console#/escrows`);
  await page.getByRole('link', { name: 'Create a demo matter' }).click();
  await page.getByTestId('demo-settled').waitFor();
});

test(
  'check names read as words: a party signature and the completeness check, never raw ids like parties[0].delivery',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    const { escrowId } = await lifecycle(e!, { pass: true });
    await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
    if (await page.getByTestId('pin-keys').count()) await page.getByTestId('pin-keys').click();
    await page.getByTestId('verify-proof').click();
    await page.getByTestId('verdict').waitFor();
    const names = await page
      .locator('.checklist li')
      .evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-check'), li.querySelector('strong')!.textContent]));
    const label = Object.fromEntries(names);
    assert.equal(label['parties[0].delivery'], 'Party signature 1: the delivery');
    assert.equal(label['parties.complete'], 'Every party signature the service relied on is included');
    for (const [id, text] of names) assert.doesNotMatch(text!, /\[\d+\]|^[a-z]+\.[a-z.]+$/, `${id} is shown as ${text}`);
    assert.deepEqual(e!.problems, []);
  },
);

test('counts agree with their nouns: terms with one check read "1 check"', skipNoBrowser, async () => {
  const { page } = e!;
  const escrow = await e!.api('POST', '/v1/escrows', {
    amount: '1',
    asset: 'USDC',
    payer: { publicKey: 'a'.repeat(64) },
    payee: { publicKey: 'b'.repeat(64) },
    terms: { description: 'one check', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
  });
  await page.goto(`${e!.base}/console#/escrows/${escrow.id}`);
  const terms = page.locator('dl.facts dd').filter({ hasText: 'one check' });
  await terms.waitFor();
  assert.equal(await terms.textContent(), 'one check (1 check: shape)');
});

test('the state machine: every label fits beside its arrow and overlaps no other label or state (1280 px)', skipNoBrowser, async () => {
  const { page } = e!;
  const { escrowId } = await lifecycle(e!, { pass: false, dispute: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
  await page.locator('svg.machine-wide').waitFor();
  assert.equal(await page.locator('svg.machine-narrow').isVisible(), false);
  // Horizontal arrows carry their label above them: the label's widest line is no wider than the arrow.
  const fits = await page.locator('svg.machine-wide .edge').evaluateAll((edges) =>
    edges
      .map((g) => {
        const line = g.querySelector('line')!;
        const y1 = Number(line.getAttribute('y1'));
        if (y1 !== Number(line.getAttribute('y2'))) return null;
        const length = Math.abs(Number(line.getAttribute('x2')) - Number(line.getAttribute('x1')));
        const widest = Math.max(...[...g.querySelectorAll('tspan')].map((t) => (t as SVGTextContentElement).getComputedTextLength()));
        return { edge: g.getAttribute('data-edge'), length, widest };
      })
      .filter(Boolean),
  );
  assert.ok(fits.some((f) => f!.edge === 'disputed>resolved'));
  for (const f of fits)
    assert.ok(f!.widest <= f!.length, `${f!.edge}: label ${f!.widest.toFixed(1)} wide on a ${f!.length.toFixed(1)} arrow`);
  const m = await machineBoxes(page, 'svg.machine-wide');
  const boxes = [
    ...m.labels.map((l) => ({ what: `label "${l.text}"`, box: l.box })),
    ...m.nodes.map((n) => ({ what: `state ${n.state}`, box: n.rect })),
  ];
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++)
      assert.ok(!overlap(boxes[i].box, boxes[j].box), `${boxes[i].what} overlaps ${boxes[j].what}`);
});

test(
  'at 390 px (a phone) the state machine is drawn top to bottom: no sideways scroll, text at a readable size, nothing overlapping',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    const { escrowId } = await lifecycle(e!, { pass: true });
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
      await page.locator('svg.machine-narrow').waitFor();
      assert.equal(await page.locator('svg.machine-wide').isVisible(), false);
      const m = await machineBoxes(page, 'svg.machine-narrow');
      assert.ok(m.svg.x >= 0 && m.svg.x + m.svg.width <= 390, `the drawing fits the screen: ${JSON.stringify(m.svg)}`);
      // A state's name and an arrow's label are at least 11 and 9 CSS px tall (the wide drawing squeezed into 390 px made them about 5).
      for (const n of m.nodes) assert.ok(n.text.height >= 11, `state ${n.state} text is ${n.text.height.toFixed(1)} px tall`);
      for (const l of m.labels)
        assert.ok(l.box.height / l.lines >= 9, `label "${l.text}" lines are ${(l.box.height / l.lines).toFixed(1)} px tall`);
      const boxes = [
        ...m.labels.map((l) => ({ what: `label "${l.text}"`, box: l.box })),
        ...m.nodes.map((n) => ({ what: `state ${n.state}`, box: n.rect })),
      ];
      for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++)
          assert.ok(!overlap(boxes[i].box, boxes[j].box), `${boxes[i].what} overlaps ${boxes[j].what}`);
      assert.equal(await page.locator('svg.machine-narrow .node.current').getAttribute('data-state'), 'settled');
      assert.equal(await page.locator('svg.machine-narrow .edge.taken').count(), 3);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  },
);

test(
  'navigating by keyboard moves focus to the page without drawing a focus frame around it; controls keep theirs',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    await page.goto(`${e!.base}/console#/escrows`);
    await page.locator('h1').waitFor();
    const verifyLink = page.locator('header nav a[data-nav="/verify"]');
    await verifyLink.focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Bundle (JSON)').waitFor();
    await page.waitForFunction(() => document.activeElement?.id === 'main');
    const main = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement!);
      return { style: s.outlineStyle, width: s.outlineWidth };
    });
    assert.ok(main.style === 'none' || main.width === '0px', `main's outline: ${JSON.stringify(main)}`);
    // A control reached by keyboard still shows where focus is.
    await page.keyboard.press('Tab');
    const control = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement!);
      return { tag: document.activeElement!.tagName, style: s.outlineStyle };
    });
    assert.notEqual(control.style, 'none', JSON.stringify(control));
  },
);

test('/favicon.ico is an icon, not a 404', skipNoBrowser, async () => {
  const { page } = e!;
  const res = await page.goto(`${e!.base}/favicon.ico`);
  assert.equal(res!.status(), 200);
  assert.equal(res!.headers()['content-type'], 'image/x-icon');
  const body = await res!.body();
  assert.deepEqual([...body.subarray(0, 4)], [0, 0, 1, 0], 'an ICO header');
  assert.deepEqual([...body.subarray(22, 26)], [0x89, 0x50, 0x4e, 0x47], 'its image is a PNG');
});
