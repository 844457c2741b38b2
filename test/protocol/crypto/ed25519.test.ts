import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import {
  generateKeyPair,
  publicKeyOf,
  sign,
  signHex,
  signJson,
  verify,
  verifyHex,
  verifyJson,
} from '@escrow-settlement/protocol/crypto/ed25519';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';

const VECTORS = new URL('../../vectors/', import.meta.url);

// RFC 8032 §7.1, TEST 1024: 1023-byte message.
const TEST_1024_MESSAGE =
  '08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1' +
  'e355f6c50544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d' +
  '658675fc6ea534e0810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a' +
  '7363c344fe6b199ee5d02e82d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e' +
  '06203b33890cc9b832f79ef80560ccb9a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc10' +
  '3b6621fcde2beca1231d206be6cd9ec7aff6f6c94fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed1' +
  '85ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d' +
  '502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88425de6bde1a9187ebb6092cf67bf2b13fd65f270' +
  '88d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc2732e69485bbc9c90bfbd62481d9089b' +
  'eccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80c3414a8d0859dc65a46128ba' +
  'b27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae0784504df543af8969b' +
  'e3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9b47acdb7' +
  '51fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d' +
  'cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34df' +
  'f7310fdc82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7' +
  '984a74d37145986780fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e4' +
  '88acba6b965610b5480109c8b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac09' +
  '43bf6686b64b2579376504ccc493d97e6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5f' +
  'b93246f6b1116398a346f1a641f3b041e989f7914f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f161' +
  '0e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45a96768d40fd9d03412c091c6315cf4fde7cb68606937380d' +
  'b2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac86aba41c0618983f8741c5ef68d3a101e8a3b8ca' +
  'c60c905c15fc910840b94c00a0b9d0';

// RFC 8032 §7.1 test vectors (secret seed, public key, message, signature), all hex.
const RFC8032 = [
  {
    name: 'TEST 1',
    secretKey: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature:
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    name: 'TEST 2',
    secretKey: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature:
      '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
  {
    name: 'TEST 3',
    secretKey: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    publicKey: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature:
      '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
  {
    name: 'TEST 1024',
    secretKey: 'f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5',
    publicKey: '278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e',
    message: TEST_1024_MESSAGE,
    signature:
      '0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03',
  },
  {
    name: 'TEST SHA(abc)',
    secretKey: '833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42',
    publicKey: 'ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf',
    message:
      'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
    signature:
      'dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704',
  },
];

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function nodePublicKey(raw: Uint8Array) {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

function nodePrivateKey(raw: Uint8Array) {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
}

test('the TEST 1024 message is the 1023 bytes the RFC specifies', () => {
  assert.equal(TEST_1024_MESSAGE.length, 2046);
});

test('the SHA(abc) message is SHA-512 of "abc"', () => {
  const vector = RFC8032.find((v) => v.name === 'TEST SHA(abc)')!;
  assert.equal(createHash('sha512').update('abc').digest('hex'), vector.message);
});

for (const v of RFC8032) {
  test(`RFC 8032 §7.1 ${v.name}: derives the public key, signs exactly, verifies, and rejects a flipped bit`, () => {
    const secretKey = fromHex(v.secretKey);
    const publicKey = fromHex(v.publicKey);
    const message = fromHex(v.message);
    assert.equal(toHex(publicKeyOf(secretKey)), v.publicKey);
    const signature = sign(message, secretKey);
    assert.equal(toHex(signature), v.signature);
    assert.equal(verify(signature, message, publicKey), true);
    assert.equal(signHex(message, v.secretKey), v.signature);
    assert.equal(verifyHex(v.signature, message, v.publicKey), true);

    for (const bit of [0, 255, 256, 511]) {
      const flipped = signature.slice();
      flipped[bit >> 3] ^= 1 << (bit & 7);
      assert.equal(verify(flipped, message, publicKey), false, `signature bit ${bit}`);
    }
    const otherMessage = message.length ? message.slice() : new Uint8Array([0]);
    otherMessage[0] ^= 1;
    assert.equal(verify(signature, otherMessage, publicKey), false, 'message bit');
    const otherKey = publicKey.slice();
    otherKey[0] ^= 1;
    assert.equal(verify(signature, message, otherKey), false, 'public key bit');
  });
}

test('ed25519-speccheck cases give the pinned strict-policy outcomes X X V V V V X X X X X X', () => {
  const cases = JSON.parse(readFileSync(new URL('ed25519-speccheck/cases.json', VECTORS), 'utf8')) as {
    message: string;
    pub_key: string;
    signature: string;
  }[];
  assert.equal(cases.length, 12);
  const outcomes = cases.map((c) => verify(fromHex(c.signature), fromHex(c.message), fromHex(c.pub_key)));
  assert.deepEqual(outcomes, [false, false, true, true, true, true, false, false, false, false, false, false]);
  const hexOutcomes = cases.map((c) => verifyHex(c.signature, fromHex(c.message), c.pub_key));
  assert.deepEqual(hexOutcomes, outcomes);
});

test('a signature made here verifies with node:crypto, and one made by node:crypto verifies here', () => {
  for (let i = 0; i < 20; i++) {
    const { secretKey, publicKey } = generateKeyPair();
    const message = crypto.getRandomValues(new Uint8Array(i * 7));
    const ours = sign(message, secretKey);
    assert.equal(nodeVerify(null, message, nodePublicKey(publicKey), ours), true);
    const theirs = new Uint8Array(nodeSign(null, message, nodePrivateKey(secretKey)));
    assert.deepEqual(theirs, ours, 'Ed25519 is deterministic, so both sign identically');
    assert.equal(verify(theirs, message, publicKey), true);
    const nodeRawPublic = nodePublicKey(publicKey).export({ format: 'der', type: 'spki' }).subarray(12);
    assert.deepEqual(new Uint8Array(nodeRawPublic), publicKeyOf(secretKey));
  }
});

test('generateKeyPair returns a 32-byte secret and its 32-byte public key, fresh each time', () => {
  const a = generateKeyPair();
  const b = generateKeyPair();
  assert.equal(a.secretKey.length, 32);
  assert.equal(a.publicKey.length, 32);
  assert.deepEqual(publicKeyOf(a.secretKey), a.publicKey);
  assert.notDeepEqual(a.secretKey, b.secretKey);
});

test('wrong-length or non-byte inputs throw a TypeError naming the argument', () => {
  const { secretKey, publicKey } = generateKeyPair();
  const msg = new Uint8Array([1]);
  const sig = sign(msg, secretKey);
  const named = (name: string) => (e: unknown) => e instanceof TypeError && e.message.startsWith(name);
  assert.throws(() => verify(sig.subarray(0, 63), msg, publicKey), named('signature'));
  assert.throws(() => verify(sig, msg, publicKey.subarray(0, 31)), named('publicKey'));
  assert.throws(() => verify(sig, 'x' as unknown as Uint8Array, publicKey), named('message'));
  assert.throws(() => sign(msg, secretKey.subarray(0, 16)), named('secretKey'));
  assert.throws(() => sign([1] as unknown as Uint8Array, secretKey), named('message'));
  assert.throws(() => publicKeyOf(new Uint8Array(64)), named('secretKey'));
});

test('a signature whose R does not decode to a point is false, not a throw', () => {
  const { secretKey, publicKey } = generateKeyPair();
  const msg = new Uint8Array([9]);
  const sig = sign(msg, secretKey);
  // y = 2 has no x on edwards25519 (RFC 8032 §5.1.3 step 3 fails).
  const bad = sig.slice();
  bad.set(fromHex('0200000000000000000000000000000000000000000000000000000000000000'), 0);
  assert.equal(verify(bad, msg, publicKey), false);
  // A public key that is not a curve point is also just false.
  assert.equal(verify(sig, msg, fromHex('02'.padEnd(64, '0'))), false);
});

test('verifyHex returns false for a malformed signature hex and throws for a malformed public key', () => {
  const { secretKey, publicKey } = generateKeyPair();
  const msg = new Uint8Array([1, 2, 3]);
  const sigHex = toHex(sign(msg, secretKey));
  const pkHex = toHex(publicKey);
  assert.equal(verifyHex(sigHex, msg, pkHex), true);
  for (const bad of [sigHex.toUpperCase(), sigHex.slice(2), `${sigHex}00`, '', 'zz'.repeat(64), null]) {
    assert.equal(verifyHex(bad as string, msg, pkHex), false);
  }
  for (const bad of [pkHex.toUpperCase(), pkHex.slice(2), '', undefined]) {
    assert.throws(
      () => verifyHex(sigHex, msg, bad as string),
      (e: unknown) => e instanceof TypeError && /publicKeyHex/.test(e.message),
    );
  }
  assert.throws(
    () => signHex(msg, 'abc'),
    (e: unknown) => e instanceof TypeError && /secretKeyHex/.test(e.message),
  );
});

test('signJson signs the canonical bytes, so verifyJson accepts any key order and rejects a changed value', () => {
  const { secretKey, publicKey } = generateKeyPair();
  const pkHex = toHex(publicKey);
  const sig = signJson({ b: 2, a: [1, 'x'] }, secretKey);
  assert.match(sig, /^[0-9a-f]{128}$/);
  assert.equal(sig, toHex(sign(canonicalBytes({ a: [1, 'x'], b: 2 }), secretKey)));
  assert.equal(verifyJson({ a: [1, 'x'], b: 2 }, sig, pkHex), true);
  assert.equal(verifyJson({ a: [1, 'x'], b: 3 }, sig, pkHex), false);
  assert.equal(verifyJson({ a: [1, 'x'], b: 2 }, 'nope', pkHex), false);
});
