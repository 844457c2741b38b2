// The cached-key signer gives exactly noble's signatures (Ed25519 is deterministic), and they verify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ed from '@noble/ed25519';
import { createSigner } from '../../src/crypto/signer.ts';
import { generateKeyPair, sign, verify } from '@escrow-settlement/protocol/crypto/ed25519';

test('createSigner signs byte for byte as ed.sign, for random keys and messages of every small length', () => {
  for (let i = 0; i < 40; i++) {
    const kp = generateKeyPair();
    const signer = createSigner(kp.secretKey);
    assert.deepEqual(signer.publicKey, kp.publicKey);
    const msg = crypto.getRandomValues(new Uint8Array(i * 7));
    const sig = signer.sign(msg);
    assert.deepEqual(sig, sign(msg, kp.secretKey));
    assert.deepEqual(sig, ed.sign(msg, kp.secretKey));
    assert.ok(verify(sig, msg, kp.publicKey));
  }
});

test('RFC 8032 §7.1 TEST 2 vector', () => {
  const seed = Uint8Array.from(Buffer.from('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb', 'hex'));
  const sig = createSigner(seed).sign(Uint8Array.of(0x72));
  assert.equal(
    Buffer.from(sig).toString('hex'),
    '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  );
});

test('createSigner refuses a seed that is not 32 bytes', () => {
  assert.throws(() => createSigner(new Uint8Array(31)), TypeError);
});

test('a bundle of the signer alone keeps the protocol package wiring noble to SHA-512, and signs', async () => {
  // The signer's import of the protocol's ed25519 module is there only for its side effect; a
  // package marked free of side effects would let a bundler drop it (esbuild warns, then drops it).
  const { build } = await import('esbuild');
  const entry = new URL('../../src/crypto/signer.ts', import.meta.url).pathname;
  const out = await build({
    stdin: { contents: `export { createSigner } from ${JSON.stringify(entry)};`, resolveDir: process.cwd(), loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  assert.deepEqual(
    out.warnings.map((w) => w.text),
    [],
  );
  const url = `data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`;
  const bundled = (await import(url)) as typeof import('../../src/crypto/signer.ts');
  const kp = generateKeyPair();
  const msg = new TextEncoder().encode('bundled');
  assert.deepEqual(bundled.createSigner(kp.secretKey).sign(msg), sign(msg, kp.secretKey));
});
