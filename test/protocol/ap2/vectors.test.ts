// The AP2 v0.2 specification's published example tokens (test/vectors/ap2/README.md): their disclosure digests,
// sd_hash bindings and key-bound signatures verify with the protocol package's own code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { splitChain } from '@escrow-settlement/protocol/ap2/chain';
import { delegateItem, parsePresented, resolveDisclosures, Ap2Refusal } from '@escrow-settlement/protocol/ap2/sdjwt';
import { jwkPublicKey, verifyEs256 } from '@escrow-settlement/protocol/ap2/jose';

const read = (name: string) => readFileSync(new URL(`../../vectors/ap2/${name}.txt`, import.meta.url), 'utf8').trimEnd();
const b64uSha256 = (s: string) => createHash('sha256').update(s, 'ascii').digest('base64url');

for (const kind of ['payment', 'checkout'] as const) {
  test(`${kind} mandate example: the chain is open~~closed, digests resolve, sd_hash binds, the closed token verifies with cnf.jwk`, () => {
    const open = read(`${kind}-mandate-open`);
    const closed = read(`${kind}-mandate-closed`);
    assert.equal(read(`${kind}-mandate-chain`), `${open}~${closed}`);
    const [o, c] = splitChain(read(`${kind}-mandate-chain`));
    assert.equal(o.presented, open);
    assert.equal(c.presented, closed);
    const openMandate = delegateItem(resolveDisclosures(o, 'open'), 'open');
    assert.equal(openMandate.vct, `mandate.${kind}.open.1`);
    const claims = resolveDisclosures(c, 'closed');
    assert.equal(claims.sd_hash, b64uSha256(open));
    assert.equal(delegateItem(claims, 'closed').vct, `mandate.${kind}.1`);
    const cnf = jwkPublicKey((openMandate.cnf as { jwk: unknown }).jwk);
    assert.equal(verifyEs256(c.jws, cnf), true);
    // The key binding is what it claims: one flipped signature byte, or another key, does not verify.
    const sig = Uint8Array.from(c.jws.signature);
    sig[10] ^= 1;
    assert.equal(verifyEs256({ ...c.jws, signature: sig }, cnf), false);
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    assert.equal(verifyEs256(c.jws, jwkPublicKey(other)), false);
  });
}

test('the payment example: the nested allowed payee is disclosed, and payment.reference names the checkout example by its sd_hash-form hash', () => {
  const [o] = splitChain(read('payment-mandate-chain'));
  const open = delegateItem(resolveDisclosures(o, 'open'), 'open') as { constraints: Array<Record<string, any>> };
  assert.deepEqual(open.constraints[1].allowed, [{ id: 'merchant_1', name: 'Demo Merchant', website: 'https://demo-merchant.example' }]);
  assert.equal(open.constraints[2].type, 'payment.reference');
  assert.equal(open.constraints[2].conditional_transaction_id, b64uSha256(read('checkout-mandate-open')));
});

test('a disclosure dropped from the example leaves its digest a decoy; one altered breaks the reference and is refused', () => {
  const open = read('payment-mandate-open');
  const [jwt, payee, mandate] = open.slice(0, -1).split('~');
  // Without the payee's disclosure the mandate still resolves, its allowed list empty: nothing is invented.
  const partial = delegateItem(resolveDisclosures(parsePresented(`${jwt}~${mandate}~`, 'open'), 'open'), 'open') as any;
  assert.deepEqual(partial.constraints[1].allowed, []);
  const altered = `${jwt}~${payee.slice(0, -2)}${payee.slice(-2) === 'Xd' ? 'Yd' : 'Xd'}~${mandate}~`;
  assert.throws(() => resolveDisclosures(parsePresented(altered, 'open'), 'open'), Ap2Refusal);
});
