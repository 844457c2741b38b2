// Replay (docs/protocol.md §6.4): a client-signed dispute action is accepted once; the same
// signed action again is 409 `replayed` and adds nothing; Idempotency-Key retries replay the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { agent, clientKey, PASSING_TERMS } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** A delivered escrow with a failed verdict between two client-held keys (payee delivers signed). */
async function clientMatter(h: Harness) {
  const payer = clientKey();
  const payee = clientKey();
  const c = await h.req('POST', '/v1/escrows', {
    amount: '3',
    asset: 'USDC',
    terms: PASSING_TERMS,
    payer: { publicKey: payer.publicKey },
    payee: { publicKey: payee.publicKey },
  });
  assert.equal(c.status, 201, c.text);
  const id = c.body.id as string;
  await h.req('POST', `/v1/escrows/${id}/fund`);
  const submittedAt = new Date().toISOString();
  const payload = { body: 'no title' };
  const d = await h.req('POST', `/v1/escrows/${id}/delivery`, {
    payload,
    submittedAt,
    signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: id, contentHash: sha(canonicalize(payload)), submittedAt }) },
  });
  assert.equal(d.status, 201, d.text);
  return { id, payer, payee };
}

const signedOpen = (m: { id: string; payer: ReturnType<typeof clientKey> }, signedAt = new Date().toISOString()) => ({
  party: m.payer.publicKey,
  reason: 'late',
  signedAt,
  signature: { signer: m.payer.publicKey, signature: m.payer.sign({ escrowId: m.id, action: 'dispute.open', reason: 'late', signedAt }) },
});
const signedEvidence = (id: string, k: ReturnType<typeof clientKey>, note: string, signedAt = new Date().toISOString()) => ({
  party: k.publicKey,
  note,
  signedAt,
  signature: { signer: k.publicKey, signature: k.sign({ escrowId: id, action: 'dispute.evidence', note, signedAt }) },
});
const trailLength = async (h: Harness, id: string) => (await h.req('GET', `/v1/escrows/${id}/trail`)).body.entries.length as number;

describeStores('replayed client-signed dispute actions', (h) => {
  test('signed evidence is accepted once; the same signed evidence again is 409 replayed and adds nothing', async () => {
    const m = await clientMatter(h());
    const open = await h().req('POST', `/v1/escrows/${m.id}/dispute`, signedOpen(m));
    assert.equal(open.status, 201, open.text);
    assert.match(open.headers.get('x-service-now')!, /^\d{4}-\d{2}-\d{2}T/);
    const ev = signedEvidence(m.id, m.payee, 'it had a title');
    const first = await h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev);
    assert.equal(first.status, 200, first.text);
    const length = await trailLength(h(), m.id);
    const again = await h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev);
    assert.match(expectError(again, 409, 'replayed'), /already accepted once/);
    assert.equal(await trailLength(h(), m.id), length);
    assert.equal((await h().req('GET', `/v1/escrows/${m.id}/dispute`)).body.evidence.length, 1);
    // The same words signed anew (another signedAt) are a new action.
    const fresh = await h().req(
      'POST',
      `/v1/escrows/${m.id}/dispute/evidence`,
      signedEvidence(m.id, m.payee, 'it had a title', new Date(Date.now() + 1000).toISOString()),
    );
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal(fresh.body.evidence.length, 2);
  });

  test('the same signed evidence sent twice at once is accepted exactly once', async () => {
    const m = await clientMatter(h());
    await h().req('POST', `/v1/escrows/${m.id}/dispute`, signedOpen(m));
    const ev = signedEvidence(m.id, m.payer, 'concurrent');
    const rs = await Promise.all([0, 1, 2].map(() => h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev)));
    assert.deepEqual(rs.map((r) => r.status).sort(), [200, 409, 409], rs.map((r) => r.text).join('\n'));
    assert.equal((await h().req('GET', `/v1/escrows/${m.id}/dispute`)).body.evidence.length, 1);
  });

  test('a signed dispute opening sent again is 409 replayed', async () => {
    const m = await clientMatter(h());
    const body = signedOpen(m);
    assert.equal((await h().req('POST', `/v1/escrows/${m.id}/dispute`, body)).status, 201);
    expectError(await h().req('POST', `/v1/escrows/${m.id}/dispute`, body), 409, 'replayed');
  });

  test('a co-signed ruling sent again is 409 replayed; nothing is closed twice', async () => {
    const m = await clientMatter(h());
    const d = (await h().req('POST', `/v1/escrows/${m.id}/dispute`, signedOpen(m))).body;
    const ruling = { escrowId: m.id, disputeId: d.id, outcome: 'refund', rationale: '' };
    const body = { outcome: 'refund', signatures: [m.payer, m.payee].map((k) => ({ signer: k.publicKey, signature: k.sign(ruling) })) };
    const r = await h().req('POST', `/v1/escrows/${m.id}/dispute/resolve`, body);
    assert.equal(r.status, 200, r.text);
    const length = await trailLength(h(), m.id);
    expectError(await h().req('POST', `/v1/escrows/${m.id}/dispute/resolve`, body), 409, 'replayed');
    assert.equal(await trailLength(h(), m.id), length);
  });

  test('an Idempotency-Key retry of signed evidence returns the original answer, not 409', async () => {
    const m = await clientMatter(h());
    await h().req('POST', `/v1/escrows/${m.id}/dispute`, signedOpen(m));
    const ev = signedEvidence(m.id, m.payee, 'with a key');
    const key = { 'idempotency-key': `ev-${m.id}` };
    const first = await h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev, key);
    assert.equal(first.status, 200, first.text);
    const retry = await h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev, key);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    // Without the key, the same action is a replay.
    expectError(await h().req('POST', `/v1/escrows/${m.id}/dispute/evidence`, ev), 409, 'replayed');
    assert.equal((await h().req('GET', `/v1/escrows/${m.id}/dispute`)).body.evidence.length, 1);
  });

  test('sandbox-form actions (the service signs) are not replay-limited: two notes from a held agent both count', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const c = (
      await h().req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      })
    ).body;
    await h().req('POST', `/v1/escrows/${c.id}/fund`);
    await h().req('POST', `/v1/escrows/${c.id}/delivery`, { agentId: payee.id, payload: {} });
    await h().req('POST', `/v1/escrows/${c.id}/dispute`, { agentId: payer.id });
    for (let i = 0; i < 2; i++)
      assert.equal((await h().req('POST', `/v1/escrows/${c.id}/dispute/evidence`, { agentId: payer.id, note: 'same' })).status, 200);
  });
});
