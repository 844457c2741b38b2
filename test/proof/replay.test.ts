// The verdict, replayable (docs/protocol.md §11.5): a bundle carries the terms, `?disclose=payload` the
// payload, and verifyBundle re-runs every check kind with the protocol package's code as verdict.replay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { agent } from '../fixtures.ts';
import { verifyBundle, type Bundle, type Check, type IssuerKey, type TermCheck } from '@escrow-settlement/client';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';

const P = { title: 'Q3', score: 7, tags: ['a', 'b'] };

/** [what, a check and a payload that pass it, a check and a payload that fail it]. */
const KINDS: Array<[string, [TermCheck, unknown], [TermCheck, unknown]]> = [
  [
    'hash',
    [{ kind: 'hash', expected: sha256Hex(canonicalize(P)) }, P],
    [{ kind: 'hash', expected: sha256Hex(canonicalize(P)) }, { title: 'Q4' }],
  ],
  ['maxBytes', [{ kind: 'maxBytes', limit: 100 }, P], [{ kind: 'maxBytes', limit: 100 }, { title: 'x'.repeat(200) }]],
  [
    'shape',
    [{ kind: 'shape', requiredFields: ['title', '/tags/1'] }, P],
    [
      { kind: 'shape', requiredFields: ['title', '/tags/1'] },
      { title: 'Q3', tags: ['a'] },
    ],
  ],
  ['deadline', [{ kind: 'deadline', by: '2099-01-01T00:00:00.000Z' }, P], [{ kind: 'deadline', by: '2001-01-01T00:00:00.000Z' }, P]],
  ['predicate non-empty', [{ kind: 'predicate', name: 'non-empty' }, P], [{ kind: 'predicate', name: 'non-empty' }, {}]],
  [
    'predicate equals',
    [{ kind: 'predicate', name: 'equals', params: { pointer: '/title', value: 'Q3' } }, P],
    [
      { kind: 'predicate', name: 'equals', params: { pointer: '/title', value: 'Q3' } },
      { ...P, title: 'Q4' },
    ],
  ],
  [
    'predicate number-range',
    [{ kind: 'predicate', name: 'number-range', params: { pointer: '/score', min: 0, max: 10 } }, P],
    [
      { kind: 'predicate', name: 'number-range', params: { pointer: '/score', min: 0, max: 10 } },
      { ...P, score: 11 },
    ],
  ],
  [
    'predicate length-range',
    [{ kind: 'predicate', name: 'length-range', params: { pointer: '/tags', min: 1, max: 3 } }, P],
    [
      { kind: 'predicate', name: 'length-range', params: { pointer: '/tags', min: 1, max: 3 } },
      { ...P, tags: [] },
    ],
  ],
];

/** A matter closed after one sandbox delivery of `payload` against `checks`: released on a pass, refunded on a fail. */
async function closedAfter(h: Harness, checks: TermCheck[], payload: unknown): Promise<{ proofId: string; passed: boolean }> {
  const payer = await agent(h, 'payer');
  const payee = await agent(h, 'payee');
  const e = await h.req('POST', '/v1/escrows', {
    amount: '1',
    asset: 'USDC',
    terms: { description: 'replayed', checks },
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
  });
  assert.equal(e.status, 201, e.text);
  assert.equal((await h.req('POST', `/v1/escrows/${e.body.id}/fund`)).status, 200);
  const d = await h.req('POST', `/v1/escrows/${e.body.id}/delivery`, { agentId: payee.id, payload });
  assert.equal(d.status, 201, d.text);
  if (d.body.proof) return { proofId: d.body.proof.id, passed: true };
  const r = await h.req('POST', `/v1/escrows/${e.body.id}/refund`);
  assert.equal(r.status, 200, r.text);
  return { proofId: r.body.id, passed: false };
}

async function bundles(h: Harness, proofId: string): Promise<{ plain: Bundle; disclosed: Bundle; pinned: IssuerKey[] }> {
  const plain = await h.req('GET', `/v1/proofs/${proofId}/bundle`);
  const disclosed = await h.req('GET', `/v1/proofs/${proofId}/bundle?disclose=payload`);
  assert.equal(plain.status, 200, plain.text);
  assert.equal(disclosed.status, 200, disclosed.text);
  return { plain: plain.body, disclosed: disclosed.body, pinned: (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys };
}

const replay = (b: Bundle, pinned: IssuerKey[]): Check =>
  verifyBundle(b, { trustedKeys: pinned }).checks.find((c) => c.name === 'verdict.replay')!;
const failing = (b: Bundle, pinned: IssuerKey[]) =>
  verifyBundle(b, { trustedKeys: pinned })
    .checks.filter((c) => !c.ok)
    .map((c) => c.name);

describeStores('the verdict, replayable', (h) => {
  for (const [what, pass, fail] of KINDS) {
    test(`${what}: a passing and a failing delivery replay as recorded; a changed payload or terms fails verdict.replay`, async () => {
      for (const [[check, payload], passes] of [
        [pass, true],
        [fail, false],
      ] as const) {
        const { proofId, passed } = await closedAfter(h(), [check], payload);
        assert.equal(passed, passes, `the service judged the ${passes ? 'passing' : 'failing'} case`);
        const { plain, disclosed, pinned } = await bundles(h(), proofId);
        assert.deepEqual(plain.terms, { description: 'replayed', checks: [check] });
        assert.equal(plain.disclosed, undefined);
        assert.deepEqual(disclosed.disclosed!.payload, payload);
        assert.deepEqual(failing(disclosed, pinned), [], 'the untouched disclosed bundle verifies');
        assert.deepEqual(failing(plain, pinned), [], 'the untouched bundle verifies without disclosure');
        const full = replay(disclosed, pinned);
        assert.match(
          full.detail,
          new RegExp(`re-ran all 1 checks .* ${passes ? 'passed' : `failed \\(${check.kind}\\)`}, as the trail records`),
        );
        const partial = replay(plain, pinned);
        if (check.kind === 'hash' || check.kind === 'deadline') assert.match(partial.detail, /^re-ran 1 of 1 checks without the payload/);
        else
          assert.match(
            partial.detail,
            new RegExp(
              `re-ran 0 of 1 checks .*not re-run without the payload: ${check.kind} \\(ask GET /v1/proofs/\\{id\\}/bundle\\?disclose=payload\\)`,
            ),
          );

        // The other case's payload (or any other) no longer hashes to the delivery.
        const swapped = structuredClone(disclosed);
        swapped.disclosed!.payload = passes ? fail[1] : pass[1];
        if (canonicalize(swapped.disclosed!.payload) === canonicalize(payload)) swapped.disclosed!.payload = { other: true };
        assert.deepEqual(failing(swapped, pinned), ['verdict.replay']);
        assert.match(replay(swapped, pinned).detail, /the disclosed payload hashes to [0-9a-f]{64}, not the delivery's contentHash/);
        // Terms changed to the other case's check: they no longer hash to proof.termsHash.
        for (const b of [plain, disclosed]) {
          const changed = structuredClone(b);
          changed.terms!.checks = [passes ? fail[0] : pass[0]];
          if (canonicalize(changed.terms!.checks) === canonicalize([check])) changed.terms!.description = 'other';
          assert.deepEqual(failing(changed, pinned), ['verdict.replay']);
          assert.match(replay(changed, pinned).detail, /^terms hash to [0-9a-f]{64}, not proof\.termsHash/);
        }
      }
    });
  }

  test('every kind in one set of terms: re-run in full with the payload, hash and deadline alone without it', async () => {
    const checks = KINDS.map(([, [c]]) => c);
    const { proofId } = await closedAfter(h(), checks, P);
    const { plain, disclosed, pinned } = await bundles(h(), proofId);
    assert.match(replay(disclosed, pinned).detail, /^re-ran all 8 checks of the terms against the disclosed payload: passed/);
    assert.equal(
      replay(plain, pinned).detail,
      're-ran 2 of 8 checks without the payload (hash, deadline): as the trail records (passed); not re-run without the payload: maxBytes, shape, predicate, predicate, predicate, predicate (ask GET /v1/proofs/{id}/bundle?disclose=payload)',
    );
  });

  test('a trail that records another verdict than the re-run gives fails verdict.replay, with or without the payload', async () => {
    const { proofId } = await closedAfter(h(), [KINDS[3][2][0], KINDS[2][1][0]], P);
    const { plain, disclosed, pinned } = await bundles(h(), proofId);
    for (const b of [plain, disclosed]) {
      const lied = structuredClone(b);
      const v = lied.trail.find((e) => e.event === 'verdict.failed')!;
      v.event = 'verdict.passed';
      v.body = { ...(v.body as object), passed: true, failed: [] };
      const bad = failing(lied, pinned);
      assert.ok(bad.includes('verdict.replay'), JSON.stringify(bad));
      assert.match(replay(lied, pinned).detail, /the trail records passed/);
    }
    const moved = structuredClone(disclosed);
    moved.disclosed!.submittedAt = '2001-01-01T00:00:00.000Z';
    assert.match(replay(moved, pinned).detail, /disclosed\.submittedAt 2001-01-01T00:00:00\.000Z is not the .* the payee signed/);
  });

  test('a matter with no delivery replays as nothing to re-run; disclose takes only payload, and nothing is disclosed', async () => {
    const payer = await agent(h(), 'payer');
    const payee = await agent(h(), 'payee');
    const e = await h().req('POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      terms: { description: 'x', checks: [{ kind: 'maxBytes', limit: 10 }] },
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
    });
    await h().req('POST', `/v1/escrows/${e.body.id}/fund`);
    const r = await h().req('POST', `/v1/escrows/${e.body.id}/refund`);
    const { disclosed, pinned } = await bundles(h(), r.body.id);
    assert.equal(disclosed.disclosed, undefined);
    assert.equal(replay(disclosed, pinned).ok, true);
    assert.match(replay(disclosed, pinned).detail, /no delivery was made, so there is no verdict to re-run/);
    const bare = structuredClone(disclosed);
    delete bare.terms;
    assert.deepEqual(failing(bare, pinned), ['verdict.replay']);
    assert.match(
      expectError(await h().req('GET', `/v1/proofs/${r.body.id}/bundle?disclose=everything`), 400, 'bad_request'),
      /disclose must be payload/,
    );
    assert.match(
      expectError(await h().req('GET', `/v1/proofs/${r.body.id}/bundle?show=1`), 400, 'bad_request'),
      /show is not a known query parameter/,
    );
    const odd = structuredClone(disclosed) as any;
    odd.disclosed = { payload: 1 };
    assert.deepEqual(
      verifyBundle(odd, { trustedKeys: pinned }).checks.map((c) => [c.name, c.detail]),
      [['bundle.format', 'disclosed.submittedAt must be a string']],
    );
  });
});
