// The local MCP server's signer (client/src/mcp/signing.ts): which calls it completes with the key
// file's signature, which it leaves as the model sent them, and what a key file may hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contentHash, generateKeys } from '@escrow-settlement/client';
import { readKeyFile, signArguments } from '@escrow-settlement/client/mcp/signing';
import { verifyJson } from '@escrow-settlement/protocol/crypto/ed25519';

const key = generateKeys();
const noDispute = async (): Promise<string> => {
  throw new Error('no dispute lookup expected');
};

test('a delivery without a form is signed by the key over {escrowId, contentHash, submittedAt}', async () => {
  const s = (await signArguments('submit_delivery', { escrowId: 'esc_1', payload: { title: 't' } }, key, noDispute)) as any;
  assert.deepEqual(Object.keys(s).sort(), ['escrowId', 'payload', 'signature', 'submittedAt']);
  assert.equal(s.signature.signer, key.publicKey);
  assert.ok(
    verifyJson(
      { escrowId: 'esc_1', contentHash: contentHash({ title: 't' }), submittedAt: s.submittedAt },
      s.signature.signature,
      key.publicKey,
    ),
  );
});

test('calls in the sandbox form, already signed, of other tools, with a malformed escrowId or that the route will refuse are sent unchanged', async () => {
  for (const [tool, args] of [
    ['submit_delivery', { escrowId: 'esc_1', agentId: 'agt_1', payload: {} }],
    ['submit_delivery', { escrowId: 'esc_1', payload: {}, submittedAt: 'x', signature: { signer: 'a', signature: 'b' } }],
    ['submit_delivery', { escrowId: 'esc_1' }],
    ['submit_delivery', { payload: {} }],
    ['open_dispute', { escrowId: 'esc_1', party: 'ab', signedAt: 'x', signature: {} }],
    ['open_dispute', { escrowId: 'esc_1', reason: 5 }],
    ['submit_evidence', { escrowId: 'esc_1', agentId: 'agt_1', note: 'n' }],
    ['submit_evidence', { escrowId: 'esc_1', note: ['n'] }],
    ['resolve_dispute', { escrowId: 'esc_1', outcome: 'release', signatures: 'all of them' }],
    ['get_escrow', { escrowId: 'esc_1' }],
    ['submit_delivery', { escrowId: '..', payload: {} }],
    ['resolve_dispute', { escrowId: '.', outcome: 'release' }],
    ['open_dispute', { escrowId: 'esc_1/../x' }],
  ] as Array<[string, Record<string, unknown>]>) {
    assert.deepEqual(await signArguments(tool, args, key, noDispute), args, `${tool} ${JSON.stringify(args)}`);
  }
});

test("dispute actions carry the party and its signature; evidence signs the payload's hash", async () => {
  const open = (await signArguments('open_dispute', { escrowId: 'esc_1', reason: 'late' }, key, noDispute)) as any;
  assert.equal(open.party, key.publicKey);
  assert.ok(
    verifyJson(
      { escrowId: 'esc_1', action: 'dispute.open', reason: 'late', signedAt: open.signedAt },
      open.signature.signature,
      key.publicKey,
    ),
  );
  const ev = (await signArguments('submit_evidence', { escrowId: 'esc_1', note: 'see', payload: { a: 1 } }, key, noDispute)) as any;
  assert.deepEqual(ev.payload, { a: 1 });
  assert.ok(
    verifyJson(
      { escrowId: 'esc_1', action: 'dispute.evidence', note: 'see', contentHash: contentHash({ a: 1 }), signedAt: ev.signedAt },
      ev.signature.signature,
      key.publicKey,
    ),
  );
});

test('given the service clock, a delivery and dispute actions are signed at its time, not the local one', async () => {
  const at = '2031-05-06T07:08:09.000Z';
  const now = async () => at;
  const d = (await signArguments('submit_delivery', { escrowId: 'esc_1', payload: { title: 't' } }, key, noDispute, now)) as any;
  assert.equal(d.submittedAt, at);
  assert.ok(
    verifyJson({ escrowId: 'esc_1', contentHash: contentHash({ title: 't' }), submittedAt: at }, d.signature.signature, key.publicKey),
  );
  const open = (await signArguments('open_dispute', { escrowId: 'esc_1', reason: 'late' }, key, noDispute, now)) as any;
  assert.equal(open.signedAt, at);
  assert.ok(
    verifyJson({ escrowId: 'esc_1', action: 'dispute.open', reason: 'late', signedAt: at }, open.signature.signature, key.publicKey),
  );
  const ev = (await signArguments('submit_evidence', { escrowId: 'esc_1', note: 'see' }, key, noDispute, now)) as any;
  assert.equal(ev.signedAt, at);
  // A call left unchanged does not ask the clock.
  const never = async (): Promise<string> => {
    throw new Error('no clock read expected');
  };
  assert.deepEqual(await signArguments('submit_delivery', { escrowId: 'esc_1', agentId: 'agt_1', payload: {} }, key, noDispute, never), {
    escrowId: 'esc_1',
    agentId: 'agt_1',
    payload: {},
  });
});

test("a ruling gains the key's signature over the dispute it reads, once", async () => {
  const other = { signer: 'cd'.repeat(32), signature: 'ef'.repeat(64) };
  const args = { escrowId: 'esc_1', outcome: 'split', shares: { payerBps: 1, payeeBps: 9999 }, signatures: [other] };
  const r = (await signArguments('resolve_dispute', args, key, async (id) => `dsp_of_${id}`)) as any;
  assert.equal(r.signatures.length, 2);
  assert.deepEqual(r.signatures[0], other);
  assert.ok(
    verifyJson(
      { escrowId: 'esc_1', disputeId: 'dsp_of_esc_1', outcome: 'split', rationale: '', shares: { payerBps: 1, payeeBps: 9999 } },
      r.signatures[1].signature,
      key.publicKey,
    ),
  );
  assert.deepEqual(await signArguments('resolve_dispute', r, key, noDispute), r, 'already signed by the key');
});

test('key files: JSON with a matching public key, or the bare hex secret; anything else is named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-keys-'));
  try {
    const write = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    };
    assert.deepEqual(readKeyFile(write('a.json', JSON.stringify(key))), key);
    assert.deepEqual(readKeyFile(write('b.json', JSON.stringify({ secretKey: key.secretKey }))), key);
    assert.deepEqual(readKeyFile(write('c.hex', `${key.secretKey}\n`)), key);
    assert.throws(() => readKeyFile(write('d.json', '{"secretKey": ')), /not valid JSON/);
    assert.throws(() => readKeyFile(write('e.json', JSON.stringify({ secretKey: key.secretKey.toUpperCase() }))), /64 lowercase hex/);
    assert.throws(
      () => readKeyFile(write('f.json', JSON.stringify({ ...key, publicKey: generateKeys().publicKey }))),
      /is not the public key of secretKey/,
    );
    assert.throws(() => readKeyFile(join(dir, 'absent')), /--key-file .*absent: ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
