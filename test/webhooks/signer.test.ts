// The expanded-once Ed25519 signer: byte-identical to noble's sign, and verified by OpenSSL (node:crypto).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify as osslVerify } from 'node:crypto';
import { generateKeyPair, sign } from '@escrow-settlement/protocol/crypto/ed25519';
import { signerFor } from '../../src/webhooks/signer.ts';

const ossl = (publicKey: Uint8Array) =>
  createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]), format: 'der', type: 'spki' });

test('signerFor gives the same 64 bytes as noble sign, and OpenSSL verifies them, for 200 keys and messages of every length to 300', () => {
  for (let i = 0; i < 200; i++) {
    const kp = generateKeyPair();
    const msg = crypto.getRandomValues(new Uint8Array((i * 3) % 301));
    const sig = signerFor(kp.secretKey)(msg);
    assert.deepEqual(sig, sign(msg, kp.secretKey));
    assert.equal(osslVerify(null, msg, ossl(kp.publicKey), sig), true);
  }
});

test('the RFC 8032 §7.1 test vectors (TEST 1 and TEST 3)', () => {
  const vectors = [
    [
      '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
      '',
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
    ],
    [
      'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
      'af82',
      '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
    ],
  ];
  for (const [sk, msg, sig] of vectors) {
    assert.equal(Buffer.from(signerFor(Buffer.from(sk, 'hex'))(Buffer.from(msg, 'hex'))).toString('hex'), sig);
  }
});
