import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { issuerSigner, rotateIssuer } from '../../src/proof/keys.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import type { Proof } from '@escrow-settlement/protocol/types';
import { issueSynthetic, outsideKey } from './fixtures.ts';

const ANCHOR = { chain: 'eip155:31337', contract: '0x' + '1'.repeat(40), escrowRef: '7', txHash: '0x' + '2'.repeat(64) };

describeStores(
  'POST /v1/verify',
  (h) => {
    let proof: Proof;

    test('a proof issued by this deployment is valid, names its key era, and was issued within it', async () => {
      ({ proof } = await issueSynthetic(h().db));
      const res = await h().req('POST', '/v1/verify', proof);
      assert.equal(res.status, 200);
      const { body: issuer } = await h().req('GET', '/.well-known/proof-issuer.json');
      const era = issuer.keys[0];
      assert.deepEqual(res.body, {
        valid: true,
        signatureValid: true,
        issuerKnown: true,
        issuer: proof.signature.signer,
        keyId: era.keyId,
        validFrom: era.validFrom,
        issuedWithinEra: true,
      });
    });

    test('an anchored proof is valid and its anchor is echoed', async () => {
      const anchored = (await issueSynthetic(h().db, { extra: { anchor: ANCHOR } })).proof;
      const res = await h().req('POST', '/v1/verify', anchored);
      assert.equal(res.body.valid, true);
      assert.deepEqual(res.body.anchor, ANCHOR);
    });

    const tampered: Array<[string, (p: any) => void]> = [
      ['amount was changed', (p) => (p.amount = '11')],
      ['outcome was changed', (p) => (p.outcome = 'refunded')],
      ['payee was changed', (p) => (p.payee = 'd'.repeat(64))],
      ['trailHead was changed', (p) => (p.trailHead = 'e'.repeat(64))],
      ['trailLength was changed', (p) => (p.trailLength += 1)],
      ['issuedAt was changed', (p) => (p.issuedAt = '2030-01-01T00:00:00.000Z')],
      ['mandateHash was added', (p) => (p.mandateHash = 'f'.repeat(64))],
      [
        'signature lost one hex digit to another',
        (p) => (p.signature.signature = (p.signature.signature[0] === '0' ? '1' : '0') + p.signature.signature.slice(1)),
      ],
    ];
    for (const [what, change] of tampered) {
      test(`a proof whose ${what} has signatureValid false and is not valid`, async () => {
        const copy = structuredClone(proof);
        change(copy);
        const res = await h().req('POST', '/v1/verify', copy);
        assert.equal(res.status, 200);
        assert.deepEqual([res.body.valid, res.body.signatureValid, res.body.issuerKnown], [false, false, true]);
      });
    }

    test('a proof signed by a key that is not a published era has issuerKnown false and no era fields', async () => {
      const key = outsideKey();
      const forged = (await issueSynthetic(h().db, { signer: key })).proof;
      const res = await h().req('POST', '/v1/verify', forged);
      assert.deepEqual(res.body, { valid: false, signatureValid: true, issuerKnown: false, issuer: key.publicKey });
    });

    test('after a rotation an old-era proof stays valid with its era window, and one dated after the era is flagged', async () => {
      const { retired, active } = await rotateIssuer(h().db);
      const res = await h().req('POST', '/v1/verify', proof);
      assert.deepEqual(res.body, {
        valid: true,
        signatureValid: true,
        issuerKnown: true,
        issuer: retired.publicKey,
        keyId: retired.keyId,
        validFrom: retired.validFrom,
        validUntil: retired.validUntil,
        issuedWithinEra: true,
      });
      // Signed by the retired key but dated after its era ended (a leaked old key): still a valid
      // signature by a published era, and issuedWithinEra says what is wrong with it.
      const held = await issuerSigner(h().db, retired.keyId);
      const { signature: _sig, ...body } = { ...proof, issuedAt: '2099-01-01T00:00:00.000Z' };
      const late = { ...body, signature: { signer: retired.publicKey, signature: toHex(held.sign(utf8(canonicalize(body)))) } };
      const r2 = await h().req('POST', '/v1/verify', late);
      assert.deepEqual([r2.body.valid, r2.body.issuedWithinEra, r2.body.keyId], [true, false, retired.keyId]);
      const fresh = await h().req('POST', '/v1/verify', (await issueSynthetic(h().db)).proof);
      assert.deepEqual(
        [fresh.body.valid, fresh.body.keyId, fresh.body.issuedWithinEra, fresh.body.validUntil],
        [true, active.keyId, true, undefined],
      );
    });

    const notProofs: Array<[string, (p: any) => unknown, RegExp]> = [
      [
        'without an id',
        (p) => {
          delete p.id;
          return p;
        },
        /^id is required/,
      ],
      ['with an escrow id of another kind', (p) => ({ ...p, escrowId: 'agt_1' }), /^escrowId must be an id starting with esc_/],
      ['with an unknown outcome', (p) => ({ ...p, outcome: 'paid' }), /^outcome expected one of/],
      ['with a numeric amount', (p) => ({ ...p, amount: 10 }), /^amount must be a decimal string/],
      ['with an upper-case payer key', (p) => ({ ...p, payer: p.payer.toUpperCase() }), /^payer must be 64 lowercase hex/],
      ['with a fractional trail length', (p) => ({ ...p, trailLength: 1.5 }), /^trailLength expected an integer/],
      ['with a negative trail length', (p) => ({ ...p, trailLength: -1 }), /^trailLength expected/],
      ['with an issue time without a zone', (p) => ({ ...p, issuedAt: '2026-01-01T00:00:00' }), /^issuedAt must be an ISO 8601/],
      [
        'with split shares that are not integers',
        (p) => ({ ...p, shares: { payerBps: 0.5, payeeBps: 9999.5 } }),
        /^shares.payerBps expected an integer/,
      ],
      ['with an anchor missing its txHash', (p) => ({ ...p, anchor: { ...ANCHOR, txHash: undefined } }), /^anchor.txHash is required/],
      ['with an unknown field', (p) => ({ ...p, note: 'hi' }), /^note is not a known field/],
      [
        'without a signature',
        (p) => {
          delete p.signature;
          return p;
        },
        /^signature is required/,
      ],
      [
        'with a signer that is not a key',
        (p) => ({ ...p, signature: { ...p.signature, signer: 'abc' } }),
        /^signature.signer must be 64 lowercase hex/,
      ],
      [
        'with a signature that is not 128 hex characters',
        (p) => ({ ...p, signature: { ...p.signature, signature: 'ab' } }),
        /^signature.signature must be a 128-character/,
      ],
      [
        'with a lone surrogate, which canonical JSON cannot hold',
        (p) => ({ ...p, id: 'prf_\ud800' }),
        /^id must not contain a lone UTF-16 surrogate/,
      ], // refused by the strict JSON reader (I-JSON) before canonicalization
      ['that is an array', () => [1, 2], /must be a JSON object|expected an object/],
    ];
    for (const [what, make, msg] of notProofs) {
      test(`a body ${what} is 400 bad_request naming the field`, async () => {
        const res = await h().req('POST', '/v1/verify', make(structuredClone(proof)) as object);
        assert.match(expectError(res, 400, 'bad_request'), msg);
      });
    }

    test('an empty body and invalid JSON are 400 bad_request', async () => {
      assert.match(
        expectError(
          await h()
            .app.fetch(new Request('http://t/v1/verify', { method: 'POST' }))
            .then(toRes),
          400,
          'bad_request',
        ),
        /required/,
      );
      assert.match(expectError(await h().req('POST', '/v1/verify', '{"id":'), 400, 'bad_request'), /not valid JSON/);
    });

    test('a body over 32 KB is 413 payload_too_large, though 1 MB is allowed elsewhere', async () => {
      const big = JSON.stringify({ ...proof, pad: 'x'.repeat(33 * 1024) });
      expectError(await h().req('POST', '/v1/verify', big), 413, 'payload_too_large');
    });
  },
  { VERIFY_RATE_LIMIT_MAX: '1000000' },
); // ~30 checks from one address; the limiter has its own tests

async function toRes(r: Response) {
  const text = await r.text();
  return { status: r.status, text, body: JSON.parse(text), headers: r.headers };
}
