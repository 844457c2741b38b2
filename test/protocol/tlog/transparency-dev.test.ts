// transparency-dev/merkle testdata (inclusion + consistency) through the RFC 9162 §2.1.3.2 / §2.1.4.2 verifiers.
//
// Policy under test: a vector with wantErr must never be accepted; our verifier reports it either as
// `false` (invalid proof) or as a TypeError (malformed input: a hash that is not 32 bytes). A TypeError
// is only allowed when some hash in the vector really is not 32 bytes, or when a size/index is not a
// safe integer (the "sub @1" vectors wrap leafIdx to 2^64 - 1, which JSON.parse rounds to 2^64).
//
// Documented divergence: consistency/additional/sizes-are-equal-one-and-proof-is-empty.json is a
// positive vector whose roots are 12 bytes ("don't care 2"). transparency-dev/merkle skips root
// length checks when size1 == size2; we always require 32-byte roots, so we throw a TypeError there.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { listJson, readJson, unb64 } from './helpers.ts';

type Outcome = 'accept' | 'reject' | 'malformed';

function outcome(run: () => boolean): Outcome {
  try {
    return run() ? 'accept' : 'reject';
  } catch (e) {
    if (e instanceof TypeError) return 'malformed';
    throw e;
  }
}

const DIVERGENT = new Set(['consistency/additional/sizes-are-equal-one-and-proof-is-empty.json']);

function checkOutcome(rel: string, wantErr: boolean, got: Outcome, hashes: Uint8Array[], nums: number[]): void {
  if (got === 'malformed') {
    const bad = hashes.some((h) => h.length !== 32) || nums.some((n) => !Number.isSafeInteger(n));
    assert.ok(bad, `${rel}: TypeError although every hash is 32 bytes and every number is safe`);
  }
  if (DIVERGENT.has(rel)) {
    assert.equal(wantErr, false);
    assert.equal(got, 'malformed', `${rel}: 12-byte roots are rejected as malformed by design`);
  } else if (wantErr) {
    assert.notEqual(got, 'accept', `${rel}: accepted a vector that must be rejected`);
  } else {
    assert.equal(got, 'accept', `${rel}: rejected a valid proof`);
  }
}

const inclusionFiles = listJson('transparency-dev-merkle/testdata/inclusion');
const consistencyFiles = listJson('transparency-dev-merkle/testdata/consistency');

describe('transparency-dev/merkle inclusion vectors', () => {
  it('finds all 98 inclusion vectors on disk', () => assert.equal(inclusionFiles.length, 98));
  for (const f of inclusionFiles) {
    const rel = `inclusion/${f}`;
    const v = readJson(`transparency-dev-merkle/testdata/${rel}`);
    it(`${v.wantErr ? 'rejects' : 'accepts'} ${v.desc} (${rel})`, () => {
      const leaf = unb64(v.leafHash);
      const root = unb64(v.root);
      const path: Uint8Array[] = (v.proof ?? []).map(unb64);
      const got = outcome(() => verifyInclusion(leaf, v.leafIdx, v.treeSize, path, root));
      checkOutcome(rel, v.wantErr, got, [leaf, root, ...path], [v.leafIdx, v.treeSize]);
    });
  }
});

describe('transparency-dev/merkle consistency vectors', () => {
  it('finds all 98 consistency vectors on disk', () => assert.equal(consistencyFiles.length, 98));
  for (const f of consistencyFiles) {
    const rel = `consistency/${f}`;
    const v = readJson(`transparency-dev-merkle/testdata/${rel}`);
    const tag = DIVERGENT.has(rel) ? 'throws TypeError (documented 12-byte-root divergence) for' : v.wantErr ? 'rejects' : 'accepts';
    it(`${tag} ${v.desc} (${rel})`, () => {
      const root1 = unb64(v.root1);
      const root2 = unb64(v.root2);
      const proof: Uint8Array[] = (v.proof ?? []).map(unb64);
      const got = outcome(() => verifyConsistency(v.size1, v.size2, root1, root2, proof));
      checkOutcome(rel, v.wantErr, got, [root1, root2, ...proof], [v.size1, v.size2]);
    });
  }
  it('every vector with size1 == 0 is rejected even with 32-byte empty-tree roots', () => {
    const empty = unb64('47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
    assert.equal(verifyConsistency(0, 0, empty, empty, []), false);
    assert.equal(verifyConsistency(0, 1, empty, empty, [empty]), false);
  });
});
