// Keys inside a PKCS#11 token (docs/keys.md "PKCS#11"): a service started with ISSUER_KEY and
// WEBHOOK_KEY as pkcs11: URIs into SoftHSM2 signs its proofs, heads and checkpoints inside the token,
// each verifying under the token's public key; a service on key files rotates its issuer into the
// token (docs/keys.md "Rotation"). Skipped with a banner when SoftHSM2 is missing and CI
// is unset; where CI is set a missing SoftHSM2 fails (.ci/run installs it).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { issuerVkey, verifyCheckpoint } from '@escrow-settlement/protocol/issuer';
import { nodeVerifyHex, settled } from '../fixtures.ts';
import { SOFTHSM_MODULE, softhsmMissing, softToken } from '../node/softhsm.ts';
import { failsNaming, overHttp, startService, TSX } from './proc.ts';
import { loadPkcs11Key } from '../../src/node/pkcs11.ts';
import { HOSTED, ROOT } from '../admin/helpers.ts';

const missing = softhsmMissing();
// One token for the file: SoftHSM2 reads SOFTHSM2_CONF once per process, at C_Initialize, and this
// process reads the token's public keys to compare.
const token = missing ? undefined : softToken();
after(() => token?.close());

test('with pkcs11: keys in SoftHSM2 the service signs proofs, heads and checkpoints inside the token', {
  skip: missing,
  timeout: 600_000,
}, async () => {
  const token = tokenOf();
  const issuerUri = token.keyPair('issuer');
  const webhookUri = token.keyPair('webhook');
  process.env.SOFTHSM2_CONF = token.env.SOFTHSM2_CONF;
  const tokenIssuer = Buffer.from(loadPkcs11Key('test', issuerUri, SOFTHSM_MODULE).signer.publicKey).toString('hex');
  const s = await startService(
    TSX,
    { DATA_DIR: ':memory:', ISSUER_KEY: issuerUri, WEBHOOK_KEY: webhookUri, PKCS11_MODULE: SOFTHSM_MODULE, ...token.env },
    150_000,
  );
  try {
    const h = overHttp(s.url);
    assert.equal((await h.req('GET', '/health')).body.issuer, tokenIssuer, 'the issuer is the token key');
    const { proof } = await settled(h);
    const { signature, ...unsigned } = proof;
    assert.equal(signature.signer, tokenIssuer);
    assert.ok(nodeVerifyHex(tokenIssuer, canonicalize(unsigned), signature.signature), 'the proof verifies under the token key');
    const head = (await h.req('GET', '/v1/log/head')).body;
    assert.ok(head.logSize >= 1);
    assert.equal(head.signature.signer, tokenIssuer);
    const headBody = { logSize: head.logSize, rootHash: head.rootHash, signedAt: head.signedAt };
    assert.ok(nodeVerifyHex(tokenIssuer, canonicalize(headBody), head.signature.signature), 'the head verifies under the token key');
    const note = await (await fetch(`${s.url}/v1/log/checkpoint`)).text();
    const origin = note.split('\n')[0];
    assert.equal(verifyCheckpoint(note, issuerVkey(origin, tokenIssuer)).ok, true, 'the checkpoint verifies under the token key');
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
  // A PIN the token refuses, and an object that is not there: one line naming the variable.
  await failsNaming(
    {
      DATA_DIR: ':memory:',
      ISSUER_KEY: issuerUri.replace('object=issuer', 'object=absent'),
      WEBHOOK_KEY: webhookUri,
      PKCS11_MODULE: SOFTHSM_MODULE,
      ...token.env,
    },
    'ISSUER_KEY',
    /no Ed25519 private key object "absent" in token "escrow-test"/,
  );
  await failsNaming(
    {
      DATA_DIR: ':memory:',
      ISSUER_KEY: `${issuerUri.split('?')[0]}?pin-value=1234`,
      WEBHOOK_KEY: webhookUri,
      PKCS11_MODULE: SOFTHSM_MODULE,
      ...token.env,
    },
    'ISSUER_KEY',
    /carries pin-value: put the PIN in a file/,
  );
});

test('a service on key files rotates its issuer to a key inside the token: later proofs and heads are signed there, earlier ones keep verifying', {
  skip: missing,
  timeout: 600_000,
}, async () => {
  const token = tokenOf();
  const tokenUri = token.keyPair('issuer-next');
  process.env.SOFTHSM2_CONF = token.env.SOFTHSM2_CONF;
  const tokenIssuer = Buffer.from(loadPkcs11Key('test', tokenUri, SOFTHSM_MODULE).signer.publicKey).toString('hex');
  // Hosted (an API key), keys generated into DATA_DIR/keys; the module is configured for the rotation's source.
  const s = await startService(TSX, { DATA_DIR: ':memory:', ...HOSTED, PKCS11_MODULE: SOFTHSM_MODULE, ...token.env }, 150_000);
  try {
    const h = overHttp(s.url, ROOT);
    const settle = async () => (await settled(h)).proof;
    const before = await settle();
    const fileIssuer = before.signature.signer;
    assert.notEqual(fileIssuer, tokenIssuer);

    const rot = await h.req('POST', '/v1/admin/issuer/rotate', { key: tokenUri });
    assert.equal(rot.status, 201, JSON.stringify(rot.body));
    assert.equal(rot.body.active.publicKey, tokenIssuer, 'the active key is the token key');
    assert.equal(rot.body.retired.publicKey, fileIssuer);

    const after = await settle();
    const { signature, ...unsigned } = after;
    assert.equal(signature.signer, tokenIssuer);
    assert.ok(nodeVerifyHex(tokenIssuer, canonicalize(unsigned), signature.signature), 'the proof verifies under the token key');
    const head = (await h.req('GET', '/v1/log/head')).body;
    assert.equal(head.signature.signer, tokenIssuer, 'the head is signed in the token');
    // The proof from before the rotation still verifies, by its era.
    const v = await h.req('POST', '/v1/verify', before);
    assert.equal(v.status, 200, JSON.stringify(v.body));
    assert.equal(v.body.valid, true, JSON.stringify(v.body));
    const keys = (await h.req('GET', '/.well-known/proof-issuer.json')).body;
    assert.deepEqual(
      keys.keys.map((k: { publicKey: string; validUntil?: string }) => [k.publicKey, k.validUntil === undefined]),
      [
        [fileIssuer, false],
        [tokenIssuer, true],
      ],
      'both eras are published, the file key retired',
    );
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});

function tokenOf() {
  assert.ok(token, 'SoftHSM2 is installed');
  return token;
}
