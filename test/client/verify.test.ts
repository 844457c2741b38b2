import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BUNDLE_KEYS_WARNING,
  issuerDocumentKeys,
  proofLeafHash,
  verifyBundle,
  verifyConsistency,
  verifyHead,
  verifyInclusion,
  verifyProof,
  verifyTrail,
} from '@escrow-settlement/client';
import type { Bundle } from '@escrow-settlement/protocol/types';
import { consistencyProof, treeRoot } from '@escrow-settlement/protocol/tlog/proofs';
import { hex, leafHashOf, makeTrail, outsideKey } from '../tlog/fixtures.ts';
import { makeBundle } from './bundle.ts';

const flip = (s: string) => (s[0] === '0' ? '1' : '0') + s.slice(1);
// The tamper matrix checks integrity with the bundle's own keys; trust is tested on its own below.
const OPEN = { trustBundleKeys: true };
const ALL = [
  'proof.signature',
  'proof.issuer',
  'issuer.trust',
  'trail.chain',
  'trail.length',
  'trail.head',
  'leaf.hash',
  'inclusion.path',
  'head.signature',
  'head.match',
  'parties.complete',
  'verdict.replay',
];

const { bundle, old, active, tree } = await makeBundle();
// A forger makes a complete, internally consistent bundle with keys of their own.
const forged = await makeBundle();
const failing = (b: Bundle, opts: object = OPEN) => verifyBundle(b, opts).checks.filter((c) => !c.ok);

describe('verifyBundle', () => {
  test('an intact bundle passes every check, each with a detail', () => {
    const r = verifyBundle(bundle, OPEN);
    assert.equal(r.ok, true, JSON.stringify(r.checks));
    assert.deepEqual(
      r.checks.map((c) => c.name),
      ALL,
    );
    for (const c of r.checks) assert.ok(c.detail.length > 10, c.name);
  });

  // Each row changes one thing and names exactly the checks that must fail, with what their detail says.
  const PROOF_BOUND = ['proof.signature', 'leaf.hash', 'inclusion.path'];
  const rows: Array<[string, (b: any) => void, string[], RegExp]> = [
    ['proof.amount', (b) => (b.proof.amount = '11'), PROOF_BOUND, /issuer signature does not verify over the canonical proof body/],
    ['proof.payer', (b) => (b.proof.payer = flip(b.proof.payer)), PROOF_BOUND, /does not verify/],
    ['proof.issuedAt', (b) => (b.proof.issuedAt = '2026-11-21T10:00:00.001Z'), PROOF_BOUND, /does not verify/],
    ['proof.signature.signature', (b) => (b.proof.signature.signature = flip(b.proof.signature.signature)), PROOF_BOUND, /does not verify/],
    [
      'proof.signature.signer (to the retired era)',
      (b) => (b.proof.signature.signer = old.publicKey),
      PROOF_BOUND,
      new RegExp(`with signer ${old.publicKey}`),
    ],
    [
      'proof.signature.signer (to an unknown key)',
      (b) => (b.proof.signature.signer = 'e'.repeat(64)),
      ['proof.signature', 'proof.issuer', 'leaf.hash', 'inclusion.path'],
      /does not verify/,
    ],
    [
      'proof.trailLength',
      (b) => (b.proof.trailLength = 2),
      ['proof.signature', 'trail.length', 'leaf.hash', 'inclusion.path'],
      /does not verify/,
    ],
    [
      'proof.trailHead',
      (b) => (b.proof.trailHead = flip(b.proof.trailHead)),
      ['proof.signature', 'trail.head', 'leaf.hash', 'inclusion.path'],
      /does not verify/,
    ],
    [
      'trail[0].prevHash',
      (b) => (b.trail[0].prevHash = flip(b.trail[0].prevHash)),
      ['trail.chain'],
      /^trail entry 0: prevHash is not 64 zeros/,
    ],
    ['trail[1].index', (b) => (b.trail[1].index = 7), ['trail.chain'], /^trail entry 1: index is 7, expected 1/],
    ['trail[1].event', (b) => (b.trail[1].event = 'escrow.refunded'), ['trail.chain'], /^trail entry 1: hash does not equal sha256\(JCS/],
    ['trail[1].body', (b) => (b.trail[1].body = { n: 99 }), ['trail.chain'], /^trail entry 1: hash does not equal/],
    ['trail[2].at', (b) => (b.trail[2].at = '2026-11-21T10:00:00.001Z'), ['trail.chain'], /^trail entry 2: hash does not equal/],
    [
      'trail[1].prevHash',
      (b) => (b.trail[1].prevHash = flip(b.trail[1].prevHash)),
      ['trail.chain'],
      /^trail entry 1: prevHash does not equal the hash of entry 0/,
    ],
    [
      'trail[2].hash',
      (b) => (b.trail[2].hash = flip(b.trail[2].hash)),
      ['trail.chain', 'trail.head'],
      /^trail entry 2: hash does not equal/,
    ],
    [
      'trail (its last entry dropped)',
      (b) => b.trail.pop(),
      ['trail.length', 'trail.head'],
      /^trail has 2 entries but proof.trailLength is 3/,
    ],
    ['inclusion.leafIndex', (b) => (b.inclusion.leafIndex = 5), ['inclusion.path'], /^audit path does not lead from this proof at leaf 5/],
    [
      'inclusion.leafHash',
      (b) => (b.inclusion.leafHash = flip(b.inclusion.leafHash)),
      ['leaf.hash'],
      /^inclusion.leafHash [0-9a-f]{64} does not equal SHA-256\(0x00 \|\| JCS\(proof\)\)/,
    ],
    ['inclusion.logSize', (b) => (b.inclusion.logSize = 8), ['inclusion.path', 'head.match'], /of a 8-leaf log/],
    ['inclusion.rootHash', (b) => (b.inclusion.rootHash = flip(b.inclusion.rootHash)), ['inclusion.path', 'head.match'], /to rootHash/],
    [
      'inclusion.auditPath[0]',
      (b) => (b.inclusion.auditPath[0] = flip(b.inclusion.auditPath[0])),
      ['inclusion.path'],
      /^audit path does not lead/,
    ],
    ['inclusion.auditPath (one hash dropped)', (b) => b.inclusion.auditPath.pop(), ['inclusion.path'], /^audit path does not lead/],
    [
      'inclusion.head.logSize',
      (b) => (b.inclusion.head.logSize = 8),
      ['head.signature', 'head.match'],
      /^tree head signature does not verify over JCS\(\{logSize, rootHash, signedAt\}\)/,
    ],
    [
      'inclusion.head.rootHash',
      (b) => (b.inclusion.head.rootHash = flip(b.inclusion.head.rootHash)),
      ['head.signature', 'head.match'],
      /^tree head signature does not verify/,
    ],
    [
      'inclusion.head.signedAt',
      (b) => (b.inclusion.head.signedAt = '2026-11-21T10:00:02.000Z'),
      ['head.signature'],
      /^tree head signature does not verify/,
    ],
    [
      'inclusion.head.keyId',
      (b) => (b.inclusion.head.keyId = b.issuerKeys[0].keyId),
      ['head.signature'],
      /^head.keyId iss_[0-9a-f]{16} does not name the signer's key/,
    ],
    [
      'inclusion.head.signature.signature',
      (b) => (b.inclusion.head.signature.signature = flip(b.inclusion.head.signature.signature)),
      ['head.signature'],
      /^tree head signature does not verify/,
    ],
    [
      'inclusion.head.signature.signer',
      (b) => (b.inclusion.head.signature.signer = 'e'.repeat(64)),
      ['head.signature'],
      /^head signer e{64} is not among the 2 issuer keys/,
    ],
    [
      'issuerKeys (the active era removed)',
      (b) => b.issuerKeys.pop(),
      ['proof.issuer', 'head.signature'],
      new RegExp(`^signer ${active.publicKey} is not among the bundle's 1 issuer keys`),
    ],
  ];
  for (const [field, change, expected, detail] of rows) {
    test(`changing ${field} fails exactly ${expected.join(', ')}, saying why`, () => {
      const b = structuredClone(bundle);
      change(b);
      const r = verifyBundle(b, OPEN);
      assert.equal(r.ok, false);
      const bad = r.checks.filter((c) => !c.ok);
      assert.deepEqual(
        bad.map((c) => c.name),
        expected,
      );
      assert.match(bad[0].detail, detail);
      assert.deepEqual(
        r.checks.map((c) => c.name),
        ALL,
        'every check still runs and reports',
      );
    });
  }

  test('a proof re-signed by a key outside the issuer eras fails only proof.issuer and the log binding', () => {
    const forger = outsideKey();
    const b = structuredClone(bundle) as any;
    const { signature: _s, ...body } = b.proof;
    b.proof.signature = { signer: forger.publicKey, signature: forger.sign(body) };
    assert.deepEqual(
      failing(b).map((c) => c.name),
      ['proof.issuer', 'leaf.hash', 'inclusion.path'],
    );
  });

  test('pinned trusted keys pass when they include the signer and fail the proof and head when they do not', () => {
    assert.equal(verifyBundle(bundle, { trustedKeys: [active.publicKey] }).ok, true);
    assert.equal(verifyBundle(bundle, { trustedKeys: [bundle.issuerKeys[1]] }).ok, true);
    const bad = failing(bundle, { trustedKeys: [old.publicKey] });
    assert.deepEqual(
      bad.map((c) => c.name),
      ['proof.issuer.trusted', 'head.trusted'],
    );
    assert.match(bad[0].detail, new RegExp(`^proof signer ${active.publicKey} is not one of the 1 trusted keys given`));
    assert.throws(() => verifyBundle(bundle, { trustedKeys: ['not-a-key'] }), /trustedKeys\[0\] must be a 64-hex public key/);
  });

  const malformed: Array<[string, (b: any) => unknown, RegExp]> = [
    ['a bundle that is not an object', () => 'bundle', /^bundle must be a JSON object/],
    [
      'a proof without a signature',
      (b) => {
        delete b.proof.signature;
        return b;
      },
      /^proof.signature must be an object/,
    ],
    [
      'a proof signer that is not hex',
      (b) => {
        b.proof.signature.signer = 'xyz';
        return b;
      },
      /^proof.signature.signer must be 64 lowercase hex/,
    ],
    [
      'a trail entry without a body',
      (b) => {
        delete b.trail[1].body;
        return b;
      },
      /^trail\[1\].body is required/,
    ],
    [
      'a leaf index that is not a whole number',
      (b) => {
        b.inclusion.leafIndex = '4';
        return b;
      },
      /^inclusion.leafIndex must be a non-negative whole number/,
    ],
    [
      'an audit path hash in upper case',
      (b) => {
        b.inclusion.auditPath[1] = b.inclusion.auditPath[1].toUpperCase();
        return b;
      },
      /^inclusion.auditPath\[1\] must be 64 lowercase hex/,
    ],
    [
      'a head without a signature',
      (b) => {
        delete b.inclusion.head.signature;
        return b;
      },
      /^inclusion.head.signature must be an object/,
    ],
    [
      'an issuerKeys field that is not an array',
      (b) => {
        b.issuerKeys = {};
        return b;
      },
      /^issuerKeys must be an array/,
    ],
  ];
  for (const [what, make, detail] of malformed) {
    test(`${what} fails bundle.format naming the field`, () => {
      const r = verifyBundle(make(structuredClone(bundle)) as Bundle, { trustedKeys: [active.publicKey] });
      assert.equal(r.ok, false);
      assert.deepEqual(
        r.checks.map((c) => c.name),
        ['bundle.format'],
      );
      assert.match(r.checks[0].detail, detail);
    });
  }
});

describe('trust is explicit (docs/protocol.md §11.5)', () => {
  test('a forged bundle carrying its own key fails without trusted keys: issuer.trust says what to give', () => {
    const r = verifyBundle(forged.bundle);
    assert.equal(r.ok, false);
    const bad = r.checks.filter((c) => !c.ok);
    assert.deepEqual(
      bad.map((c) => c.name),
      ['issuer.trust'],
    );
    assert.match(bad[0].detail, /^no trusted issuer key given: pin the issuer keys \(trustedKeys/);
    assert.equal(r.warnings, undefined);
    assert.equal(verifyBundle(bundle).ok, false, 'the genuine bundle is not valid without a trusted key either');
  });

  test('against the pinned issuer key the forged bundle fails proof.issuer.trusted and head.trusted', () => {
    const r = verifyBundle(forged.bundle, { trustedKeys: [active.publicKey] });
    assert.equal(r.ok, false);
    assert.deepEqual(
      r.checks.filter((c) => !c.ok).map((c) => c.name),
      ['proof.issuer.trusted', 'head.trusted'],
    );
    assert.equal(verifyBundle(bundle, { trustedKeys: [active.publicKey] }).ok, true);
  });

  test('trustBundleKeys accepts the keys inside the bundle only with a warning, in the result and in issuer.trust', () => {
    const r = verifyBundle(forged.bundle, { trustBundleKeys: true });
    assert.equal(r.ok, true);
    assert.deepEqual(r.warnings, [BUNDLE_KEYS_WARNING]);
    assert.match(BUNDLE_KEYS_WARNING, /anyone can make a bundle that passes with a key of their own/);
    const trust = r.checks.find((c) => c.name === 'issuer.trust')!;
    assert.equal(trust.ok, true);
    assert.match(trust.detail, /^WARNING trusting the issuer keys inside the bundle/);
  });

  test('an issuer document the caller pinned is a list of trusted keys; contradictory options throw', () => {
    const doc = { keys: bundle.issuerKeys };
    assert.equal(verifyBundle(bundle, { trustedKeys: issuerDocumentKeys(doc) }).ok, true);
    assert.equal(verifyBundle(forged.bundle, { trustedKeys: issuerDocumentKeys(doc) }).ok, false);
    assert.throws(
      () => verifyBundle(bundle, { trustedKeys: [active.publicKey], trustBundleKeys: true }),
      /give trustedKeys or trustBundleKeys, not both/,
    );
    assert.throws(() => verifyBundle(bundle, { trustBundleKeys: 'yes' as never }), /trustBundleKeys must be a boolean/);
  });
});

describe('the single-purpose verifiers', () => {
  test('verifyTrail returns null for an intact chain and the index of the first break otherwise', () => {
    const trail = makeTrail(5, '2026-11-21T10:00:00.000Z');
    assert.equal(verifyTrail(trail), null);
    assert.equal(verifyTrail([]), null);
    const broken = structuredClone(trail);
    broken[3].body = { changed: true };
    assert.equal(verifyTrail(broken), 3);
    assert.equal(verifyTrail([trail[0], trail[2]]), 1);
    assert.throws(() => verifyTrail('nope' as never), TypeError);
  });

  test('verifyProof checks the issuer signature and, with trusted keys, the signer', () => {
    assert.equal(verifyProof(bundle.proof).ok, true);
    assert.equal(verifyProof(bundle.proof, { trustedKeys: [active.publicKey] }).ok, true);
    assert.deepEqual(
      verifyProof(bundle.proof, { trustedKeys: [old.publicKey] }).checks.map((c) => [c.name, c.ok]),
      [
        ['proof.signature', true],
        ['proof.issuer.trusted', false],
      ],
    );
    assert.equal(verifyProof({ ...bundle.proof, amount: '9' }).ok, false);
    assert.throws(() => verifyProof({} as never), /proof.signature must be an object/);
  });

  test('verifyInclusion binds the proof to its leaf and the audit path to the root', () => {
    assert.equal(proofLeafHash(bundle.proof), leafHashOf(bundle.proof));
    assert.equal(verifyInclusion(bundle.proof, bundle.inclusion).ok, true);
    assert.deepEqual(
      verifyInclusion({ ...bundle.proof, asset: 'EURC' }, bundle.inclusion).checks.map((c) => c.ok),
      [false, false],
    );
  });

  test('verifyHead needs the signer among the issuer keys and a signature over the head', () => {
    assert.equal(verifyHead(bundle.inclusion.head, bundle.issuerKeys).ok, true);
    assert.equal(verifyHead(bundle.inclusion.head, bundle.issuerKeys.slice(0, 1)).ok, false);
  });

  test('verifyConsistency accepts every proof of the 9-leaf tree and refuses a changed root', async () => {
    const roots = await Promise.all(Array.from({ length: 10 }, (_, n) => treeRoot(n, tree.read)));
    for (let second = 1; second <= 9; second++) {
      for (let first = 1; first <= second; first++) {
        const path = (await consistencyProof(first, second, tree.read)).map(hex);
        const c = { firstSize: first, secondSize: second, firstRoot: hex(roots[first]), secondRoot: hex(roots[second]), path };
        assert.equal(verifyConsistency(c).ok, true, `${first} -> ${second}`);
        if (first < second) {
          const r = verifyConsistency({ ...c, firstRoot: flip(c.firstRoot) });
          assert.equal(r.ok, false);
          assert.match(r.checks[0].detail, /consistency path does not show the \d+-leaf log/);
        }
      }
    }
  });
});
