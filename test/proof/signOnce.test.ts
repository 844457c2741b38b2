// signProofOnce gives exactly what the protocol package's own functions give: the same signature
// over JCS of the body, the same leaf hash over JCS of the whole proof, and that JCS as the stored text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { proofLeafHash } from '@escrow-settlement/protocol/verify';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { heldSigner } from '../../src/crypto/signer.ts';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { signProof, type UnsignedProof } from '../../src/proof/proof.ts';
import { signProofOnce } from '../../src/proof/signOnce.ts';

const base: UnsignedProof = {
  id: 'prf_01',
  escrowId: 'esc_01',
  outcome: 'released',
  payer: 'a'.repeat(64),
  payee: 'b'.repeat(64),
  amount: '25.5',
  asset: 'USDC',
  termsHash: 'c'.repeat(64),
  trailHead: 'd'.repeat(64),
  trailLength: 4,
  issuedAt: '2026-01-01T00:00:00.000Z',
};

const cases: Array<[string, UnsignedProof]> = [
  ['a release', { ...base, deliveryHash: 'e'.repeat(64), verdictId: 'vrd_01' }],
  [
    'a split with shares and a dispute',
    { ...base, outcome: 'split', disputeId: 'dsp_01', shares: { payeeBps: 2500 } as UnsignedProof['shares'] },
  ],
  [
    'a refund with a mandate and non-ASCII text',
    { ...base, outcome: 'refunded', mandateHash: 'f'.repeat(64), asset: 'USDC\u00e9\u{1F600}' },
  ],
];

for (const [name, body] of cases) {
  test(`signProofOnce: ${name} is signed and hashed as signProof and proofLeafHash do`, () => {
    const kp = generateKeyPair();
    const held = heldSigner(toHex(kp.secretKey));
    // As the issuer signer (src/proof/keys.ts) hands it over: the public key in hex.
    const key = { publicKey: toHex(kp.publicKey), sign: (m: Uint8Array) => held.sign(m) };
    const once = signProofOnce(body, key);
    const twice = signProof(body, key);
    assert.deepEqual(once.proof, twice);
    assert.equal(once.jcs, canonicalize(twice));
    assert.equal(once.leafHashHex, proofLeafHash(twice));
    assert.deepEqual(JSON.parse(once.jcs), twice);
  });
}
