// In a real browser: offline verification. The proof page and the standalone verify page run
// verifyBundle in the page against the pinned issuer key; a valid bundle says valid, one changed
// byte says which check failed, and verifying sends no request at all (asserted by interception).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const e: Env | null = BROWSER ? await openEnv() : null;

/** Check name → pass (true) or fail (false), as the page shows them. */
const shownChecks = (env: Env) =>
  env.page
    .locator('[data-check]')
    .evaluateAll((lis) => Object.fromEntries(lis.map((li) => [li.getAttribute('data-check'), li.classList.contains('ok')])));

test(
  'the proof page pins the issuer key once (remembered), then verifies the bundle in the page: valid, every check passing',
  skipNoBrowser,
  async () => {
    const { escrowId } = await lifecycle(e!, { pass: true });
    const { page } = e!;
    await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
    await page.getByTestId('pin-keys').click();
    await page.getByText('Pinned issuer key').waitFor();
    const pinned = await page.evaluate(() => JSON.parse(localStorage.getItem('escrow-console.pinnedIssuerKeys') ?? '[]'));
    const issuer = await e!.api('GET', '/.well-known/proof-issuer.json');
    assert.deepEqual(pinned, issuer.keys);
    await page.getByTestId('verify-proof').click();
    await page.getByTestId('verdict').waitFor();
    assert.match((await page.getByTestId('verdict').textContent()) ?? '', /^Valid: all \d+ checks pass/);
    const checks = await shownChecks(e!);
    for (const name of [
      'proof.signature',
      'proof.issuer.trusted',
      'trail.chain',
      'inclusion.path',
      'head.signature',
      'head.match',
      'verdict.replay',
    ])
      assert.equal(checks[name], true, name);
    // The page fetched the bundle with the payload disclosed, so the verdict was re-run in full.
    const replay = page.locator('[data-check="verdict.replay"]');
    assert.match(
      (await replay.textContent()) ?? '',
      /Verdict re-run from the terms.*re-ran all \d+ checks of the terms against the disclosed payload: passed/,
    );
    // Remembered: a reload offers no pin button, the pin is still there.
    await page.reload();
    await page.getByText('Pinned issuer key').waitFor();
    assert.equal(await page.getByTestId('pin-keys').count(), 0);
    assert.deepEqual(e!.problems, []);
  },
);

test('the verify page makes no network request while verifying, and one changed byte names the failed check', skipNoBrowser, async () => {
  const { proofId } = await lifecycle(e!, { pass: true });
  const bundle = await e!.api('GET', `/v1/proofs/${proofId}/bundle`);
  const { page } = e!;
  await page.goto(`${e!.base}/console#/verify`);
  await page.getByRole('heading', { name: /Verify a settlement proof/ }).waitFor();
  if (await page.getByTestId('pin-keys').count()) await page.getByTestId('pin-keys').click();
  await page.getByText('Pinned issuer key').waitFor();
  await page.waitForLoadState('networkidle');

  // From here on every request is recorded and refused.
  const requests: string[] = [];
  await page.route('**/*', (route) => {
    requests.push(route.request().url());
    return route.abort();
  });
  page.on('request', (r) => requests.push(r.url()));

  const verify = async (text: string) => {
    await page.getByLabel('Bundle (JSON)').fill(text);
    await page.getByTestId('verify-run').click();
    await page.getByTestId('verdict').waitFor();
    return { verdict: await page.getByTestId('verdict').textContent(), checks: await shownChecks(e!) };
  };
  const text = JSON.stringify(bundle, null, 2);
  const good = await verify(text);
  assert.match(good.verdict ?? '', /^Valid: all \d+ checks pass/);
  assert.ok(Object.values(good.checks).every(Boolean));

  const flip = (hex: string) => hex.slice(0, 10) + (hex[10] === '0' ? '1' : '0') + hex.slice(11);
  const failed = (c: Record<string, boolean>) =>
    Object.entries(c)
      .filter(([, ok]) => !ok)
      .map(([n]) => n);

  // One byte of the checkpoint's signature: only that check fails.
  const headSig = bundle.inclusion.head.signature.signature as string;
  const badHead = await verify(text.replace(headSig, flip(headSig)));
  assert.match(badHead.verdict ?? '', /^Not valid: 1 of \d+ checks fails \(Checkpoint \(signed tree head\) signature\)/);
  assert.deepEqual(failed(badHead.checks), ['head.signature']);

  // One byte of the issuer signature: the signature fails, and so does the log leaf (it hashes the whole proof).
  const sig = bundle.proof.signature.signature as string;
  const bad = await verify(text.replace(sig, flip(sig)));
  assert.deepEqual(failed(bad.checks), ['proof.signature', 'leaf.hash', 'inclusion.path', 'checkpoint.inclusion']);

  // One byte of a trail entry's event name: the chain check fails and says which entry.
  const tampered = await verify(text.replace('"escrow.funded"', '"escrow.fundee"'));
  assert.equal(tampered.checks['trail.chain'], false);
  assert.equal(tampered.checks['proof.signature'], true);
  assert.match((await page.locator('[data-check="trail.chain"] .detail').textContent()) ?? '', /trail entry 1/);

  // One byte of the audit head's root: the head and inclusion checks fail, the proof's own signature still holds.
  const root = bundle.inclusion.rootHash as string;
  const other = await verify(text.replaceAll(root, (root[0] === 'a' ? 'b' : 'a') + root.slice(1)));
  assert.equal(other.checks['inclusion.path'], false);
  assert.equal(other.checks['proof.signature'], true);

  assert.deepEqual(requests, [], 'verifying made network requests');
  // The interception would have seen one: a fetch from the page is recorded (and refused).
  await page.evaluate(() => fetch('/health').catch(() => null));
  assert.equal(
    (requests as string[]).some((u) => u.endsWith('/health')),
    true,
  );
  await page.unroute('**/*');
  assert.deepEqual(e!.problems, []);
});

test(
  'with no pinned key the page does not call a bundle valid: only the trust check fails, and it says to pin',
  skipNoBrowser,
  async () => {
    const { proofId } = await lifecycle(e!, { pass: true });
    const bundle = await e!.api('GET', `/v1/proofs/${proofId}/bundle`);
    const { page } = e!;
    await page.goto(`${e!.base}/console#/verify`);
    if (await page.getByRole('button', { name: 'Forget pinned keys' }).count())
      await page.getByRole('button', { name: 'Forget pinned keys' }).click();
    await page.getByTestId('pin-keys').waitFor();
    await page.getByLabel('Bundle (JSON)').fill(JSON.stringify(bundle));
    await page.getByTestId('verify-run').click();
    await page.getByTestId('verdict').waitFor();
    assert.match(
      (await page.getByTestId('verdict').textContent()) ?? '',
      /^Not valid yet: no issuer key is pinned\. The other \d+ checks pass\.$/,
    );
    const checks = await shownChecks(e!);
    assert.deepEqual(
      Object.entries(checks)
        .filter(([, ok]) => !ok)
        .map(([n]) => n),
      ['issuer.trust'],
    );
    // It says what to click, in the page's words, not the library's option names.
    const pinButton = await page.getByTestId('pin-keys').textContent();
    const how = (await page.getByTestId('how-to-pin').textContent()) ?? '';
    assert.ok(how.includes(`Click "${pinButton}" above, then verify again.`), how);
    const detail = (await page.locator('[data-check="issuer.trust"] .detail').textContent()) ?? '';
    assert.ok(detail.includes(`Click "${pinButton}" above`), detail);
    assert.doesNotMatch(how + detail, /trustedKeys|trustBundleKeys/);
    // Clicking it, then verifying again, makes the same bundle valid.
    await page.getByTestId('pin-keys').click();
    await page.getByRole('button', { name: 'Forget pinned keys' }).waitFor();
    await page.getByTestId('verify-run').click();
    await page
      .getByTestId('verdict')
      .filter({ hasText: /^Valid: all \d+ checks pass\.$/ })
      .waitFor();
    assert.deepEqual(e!.problems, []);
  },
);
