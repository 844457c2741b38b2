// In a real browser: the money of a matter (docs/protocol.md §24). A settled matter with a fee shows
// the fee and the closing payouts; a refund after release made through the sandbox form shows on the
// escrow page with the refunded total, the net payouts and its adjustment proof; the verify page passes
// a bundle with adjustments, reports the net payouts and names a tampered adjustment's failing check;
// at 390 px the new tables are cards.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { axe, BROWSER, openEnv, skipNoBrowser, type Env } from './browser.ts';

const e: Env | null = BROWSER ? await openEnv() : null;

/** A matter with a 2.5 % fee and an arbiter, settled by a passing delivery. */
async function feeMatter(env: Env) {
  const [payer, payee, arbiter, feeTo] = await Promise.all(
    ['payer', 'payee', 'arbiter', 'platform'].map((label) => env.api('POST', '/v1/agents', { label })),
  );
  const escrow = await env.api('POST', '/v1/escrows', {
    amount: '10',
    asset: 'USDC',
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
    arbiterAgentId: arbiter.id,
    fee: { bps: 250, recipient: feeTo.publicKey },
    terms: { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
  });
  await env.api('POST', `/v1/escrows/${escrow.id}/fund`);
  const delivery = await env.api('POST', `/v1/escrows/${escrow.id}/delivery`, { agentId: payee.id, payload: { title: 'done' } });
  return { escrowId: escrow.id as string, proofId: delivery.proof.id as string, payer, payee, arbiter, feeTo };
}

let m: Awaited<ReturnType<typeof feeMatter>>;
const text = async (testId: string) => (await e!.page.getByTestId(testId).textContent()) ?? '';

test('a settled matter with a fee shows the fee, the closing payouts and the open refund deadline', skipNoBrowser, async () => {
  m = await feeMatter(e!);
  const { page } = e!;
  const proof = await e!.api('GET', `/v1/escrows/${m.escrowId}/proof`);
  // The service's numbers, so the page is compared with what the service computed (2.5 % of 10).
  assert.deepEqual(proof.payouts, { payee: '9.75', payer: '0', fee: '0.25' });
  const escrow = await e!.api('GET', `/v1/escrows/${m.escrowId}`);
  assert.ok(escrow.refundDeadline);
  await page.goto(`${e!.base}/console#/escrows/${m.escrowId}`);
  await page.getByTestId('escrow-state').filter({ hasText: 'settled' }).waitFor();
  const fee = await text('fee');
  assert.match(fee, /^2\.5% \(250 bps\): 0\.25 USDC to /);
  assert.ok(fee.includes(m.feeTo.publicKey), fee);
  assert.equal(await text('closing-payouts'), 'payee 9.75, payer 0, fee 0.25 USDC');
  assert.equal(await text('refunded-total'), '0 USDC');
  const deadline = await text('refund-deadline');
  assert.match(deadline, /\(open by the service clock\)$/);
  assert.ok(deadline.startsWith(escrow.refundDeadline.replace('T', ' ').replace('.000Z', 'Z')), deadline);
  // No refund yet: no net payouts line, no refunds table.
  assert.equal(await page.getByTestId('net-payouts').count(), 0);
  // The proof section shows the proof's own fee and payouts.
  assert.match(await text('proof-fee'), /^2\.5% \(250 bps\): 0\.25 USDC to /);
  assert.equal(await text('proof-payouts'), 'payee 9.75, payer 0, fee 0.25 USDC');

  // A partial capture under a metered price: the delivery claims 4 of 10 (8 units at 0.5), the payee
  // gets the claim less the fee, the payer the rest.
  const [payer, payee] = await Promise.all([e!.api('POST', '/v1/agents', {}), e!.api('POST', '/v1/agents', {})]);
  const partial = await e!.api('POST', '/v1/escrows', {
    amount: '10',
    asset: 'USDC',
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
    fee: { bps: 1000, recipient: m.feeTo.publicKey },
    terms: { description: 'metered', checks: [{ kind: 'price', perUnit: '0.5', units: '/units' }] },
  });
  await e!.api('POST', `/v1/escrows/${partial.id}/fund`);
  await e!.api('POST', `/v1/escrows/${partial.id}/delivery`, { agentId: payee.id, payload: { units: 8 }, amount: '4' });
  await page.goto(`${e!.base}/console#/escrows/${partial.id}`);
  await page.getByTestId('closing-payouts').waitFor();
  assert.equal(await text('closing-payouts'), 'payee 3.6, payer 6, fee 0.4 USDC (captured 4 of 10)');
  assert.match(await text('fee'), /^10% \(1000 bps\): 0\.4 USDC to /);
  assert.deepEqual(e!.problems, []);
});

test(
  'a refund through the sandbox form shows on the escrow page: refunded total, net payouts, who refunded and the adjustment proof',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    await page.goto(`${e!.base}/console#/sandbox`);
    const refund = async (amount: string, reason: string, agentId: string) => {
      await page.getByLabel('Escrow', { exact: true }).fill(m.escrowId);
      await page.getByLabel('Amount', { exact: true }).fill(amount);
      await page.getByLabel('Reason', { exact: true }).fill(reason);
      await page.getByLabel('Signer agent (payee or arbiter)').fill(agentId);
      await page.getByTestId('refund').click();
    };
    await refund('2', 'late delivery', m.payee.id);
    const status = page.getByTestId('sandbox-status');
    await status.filter({ hasText: /^Refund rfd_/ }).waitFor();
    assert.match((await status.textContent()) ?? '', /adjustment proof prf_\w+, refunded total 2\.$/);
    // Refreshed: the form is empty again, the page rendered afresh.
    assert.equal(await page.getByLabel('Escrow', { exact: true }).inputValue(), '');

    // Over what remains of the payee's net payout (9.75 - 2): the error envelope, nothing recorded.
    await refund('8', 'too much', m.payee.id);
    await status.getByRole('alert').waitFor();
    assert.match((await status.textContent()) ?? '', /^invalid_state: .*7\.75/);
    // The payer cannot refund itself: 403 unauthorized_ruling.
    await refund('1', 'mine', m.payer.id);
    await status
      .getByRole('alert')
      .filter({ hasText: /^unauthorized_ruling: / })
      .waitFor();

    // The arbiter rules on a claim; the payer asks for another refund (no money moves).
    await refund('1', 'ruling on a claim', m.arbiter.id);
    await status.filter({ hasText: /refunded total 3\.$/ }).waitFor();
    await e!.api('POST', `/v1/escrows/${m.escrowId}/refund-requests`, { amount: '1.5', reason: 'page 4 missing', agentIds: [m.payer.id] });

    const trail = await e!.api('GET', `/v1/escrows/${m.escrowId}/trail`);
    const adjustments = trail.entries.filter((t: any) => t.event === 'refund.issued').map((t: any) => t.body.proofId);
    assert.equal(adjustments.length, 2);

    await page.goto(`${e!.base}/console#/escrows/${m.escrowId}`);
    await page.getByTestId('net-payouts').waitFor();
    assert.equal(await text('refunded-total'), '3 USDC');
    assert.equal(await text('net-payouts'), 'payee 6.75, payer 3, fee 0.25 USDC');
    assert.equal(await text('closing-payouts'), 'payee 9.75, payer 0, fee 0.25 USDC');
    const rows = async (caption: RegExp) =>
      page
        .locator('table', { has: page.locator('caption', { hasText: caption }) })
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const refunds = await rows(/^Refunds after release/);
    assert.equal(refunds.length, 2);
    assert.deepEqual(
      refunds.map((r) => [r[0], r[1], r[2]!.split(' ')[0], r[4]]),
      [
        ['2 USDC', 'late delivery', 'payee', adjustments[0]],
        ['1 USDC', 'ruling on a claim', 'arbiter', adjustments[1]],
      ],
    );
    const requests = await rows(/^Refund requests/);
    assert.deepEqual(
      requests.map((r) => [r[0], r[1], r[2]!.split(' ')[0]]),
      [['1.5 USDC', 'page 4 missing', 'payer']],
    );
    // The closing proof's own verification in the page reports the net payouts too.
    if (await page.getByTestId('pin-keys').count()) await page.getByTestId('pin-keys').click();
    await page.getByTestId('verify-proof').click();
    await page.getByTestId('verdict').waitFor();
    assert.match(await text('verdict'), /^Valid: all \d+ checks pass/);
    assert.equal(await text('verified-payouts'), 'Net payouts after 2 refunds: payee 6.75, payer 3, fee 0.25 USDC (verified here).');
    assert.deepEqual(e!.problems, []);
  },
);

/** Check name → pass (true) or fail (false), as the page shows them. */
const shownChecks = () =>
  e!.page
    .locator('[data-check]')
    .evaluateAll((lis) => Object.fromEntries(lis.map((li) => [li.getAttribute('data-check'), li.classList.contains('ok')])));

test(
  "the verify page passes a bundle with adjustments, shows them and the net payouts, and names a tampered adjustment's failing check",
  skipNoBrowser,
  async () => {
    const bundle = await e!.api('GET', `/v1/proofs/${m.proofId}/bundle`);
    assert.equal(bundle.adjustments.length, 2);
    const { page } = e!;
    await page.goto(`${e!.base}/console#/verify`);
    await page.getByRole('heading', { name: /Verify a settlement proof/ }).waitFor();
    if (await page.getByTestId('pin-keys').count()) await page.getByTestId('pin-keys').click();
    await page.getByText('Pinned issuer key').waitFor();
    const verify = async (b: unknown) => {
      await page.getByLabel('Bundle (JSON)').fill(JSON.stringify(b, null, 2));
      await page.getByTestId('verify-run').click();
      await page.getByTestId('verdict').waitFor();
      return { verdict: await text('verdict'), checks: await shownChecks() };
    };
    const good = await verify(bundle);
    assert.match(good.verdict, /^Valid: all \d+ checks pass/);
    for (const i of [0, 1])
      for (const c of ['signature', 'inclusion', 'binding', 'trail', 'signer', 'deadline', 'total'])
        assert.equal(good.checks[`adjustments[${i}].${c}`], true, `adjustments[${i}].${c}`);
    assert.equal(good.checks['adjustments.complete'], true);
    assert.equal(good.checks['payouts.sum'], true);
    // Readable labels, not the library's names.
    assert.match(
      (await page.locator('[data-check="adjustments[1].signer"] strong').textContent()) ?? '',
      /^Adjustment 2: signed by the payee or the arbiter$/,
    );
    assert.match((await page.locator('[data-check="adjustments.complete"] strong').textContent()) ?? '', /^Every refund after release/);
    const refundParty = page.locator('[data-check$=".refund"] strong').first();
    assert.match((await refundParty.textContent()) ?? '', /^Party signature \d+: the refund after release$/);
    const money = page.getByTestId('bundle-money');
    assert.match((await money.textContent()) ?? '', /Payoutspayee 9\.75, payer 0, fee 0\.25 USDC/);
    const adj = await money
      .locator('tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    assert.deepEqual(
      adj.map((r) => r.slice(1)),
      [
        ['2 USDC', m.proofId, '2', 'late delivery'],
        ['1 USDC', m.proofId, '3', 'ruling on a claim'],
      ],
    );
    assert.equal(await text('verified-payouts'), 'Net payouts after 2 refunds: payee 6.75, payer 3, fee 0.25 USDC (verified here).');

    // The second refund's amount raised after signing: its signature fails (and its leaf, so its
    // inclusion), and the verdict names it in words.
    const tampered = structuredClone(bundle);
    tampered.adjustments[1].proof.amount = '1.5';
    const bad = await verify(tampered);
    const failed = Object.entries(bad.checks)
      .filter(([, ok]) => !ok)
      .map(([n]) => n);
    assert.ok(failed.includes('adjustments[1].signature'), failed.join());
    assert.ok(
      failed.every((n) => n.startsWith('adjustments[1].')),
      failed.join(),
    );
    assert.equal(bad.checks['proof.signature'], true);
    assert.match(bad.verdict, /^Not valid: .*Adjustment 2: issuer signature/);
    assert.match(await text('verified-payouts'), /\(as the bundle says; not verified: a check fails\)\.$/);
    assert.deepEqual(e!.problems, []);
  },
);

test('the money section has no accessibility violation, and at 390 px its tables are cards', skipNoBrowser, async () => {
  const { page } = e!;
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${e!.base}/console#/escrows/${m.escrowId}`);
  await page.getByTestId('net-payouts').waitFor();
  await page.waitForLoadState('networkidle');
  assert.deepEqual(await axe(page), []);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await page.getByTestId('net-payouts').waitFor();
  const r = await page.evaluate(() => {
    const money = [...document.querySelectorAll('main section')].find((s) => s.querySelector('h2')?.textContent === 'Money')!;
    const cells = [...money.querySelectorAll<HTMLElement>('table tbody td')];
    return {
      tables: money.querySelectorAll('table').length,
      cells: cells.length,
      blockCells: cells.filter((c) => getComputedStyle(c).display === 'block').length,
      labelled: cells.filter((c) => getComputedStyle(c, '::before').content.includes(c.dataset.label ?? '\u0000')).length,
      headsShown: [...money.querySelectorAll('thead')].filter((t) => t.getBoundingClientRect().height > 2).length,
      wide: document.scrollingElement!.scrollWidth,
      over: [...document.querySelectorAll<HTMLElement>('main *')]
        .filter((x) => x.getBoundingClientRect().right > 390 && !x.closest('thead'))
        .slice(0, 5)
        .map((x) => `${x.tagName}.${x.className} ${x.getBoundingClientRect().right} ${x.textContent?.slice(0, 60)}`),
    };
  });
  assert.equal(r.tables, 2, 'the refunds and the refund requests');
  assert.ok(r.cells > 0);
  assert.equal(r.blockCells, r.cells, 'every cell is a line of its card');
  assert.equal(r.labelled, r.cells, 'every cell shows its label');
  assert.equal(r.headsShown, 0);
  assert.ok(r.wide <= 390, `${r.wide}px wide: ${r.over.join(' | ')}`);
  assert.deepEqual(e!.problems, []);
});
