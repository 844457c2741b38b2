// Strict base64/hex codecs used by note and checkpoint text, and the package's public re-exports.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { base64Decode, base64Encode, hexDecode, hexEncode } from '@escrow-settlement/protocol/tlog/encoding';
import * as tlog from '@escrow-settlement/protocol/tlog/index';

describe('encodings', () => {
  it('encodes and decodes standard padded base64 exactly like RFC 4648 §4 for every length 0..40', () => {
    for (let n = 0; n <= 40; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 97 + n) & 255);
      const b64 = base64Encode(bytes);
      assert.equal(b64, Buffer.from(bytes).toString('base64'));
      assert.deepEqual(base64Decode(b64), bytes);
    }
  });

  it('rejects non-canonical base64: missing padding, whitespace, URL alphabet, non-zero pad bits', () => {
    for (const bad of ['AQ', 'AQ=', 'AQ== ', ' AQ==', 'A Q==', '-_8=', 'AR==', 'AQI=x', '====']) {
      assert.throws(() => base64Decode(bad), TypeError, bad);
    }
  });

  it('round-trips lowercase hex and rejects odd or non-hex input', () => {
    assert.equal(hexEncode(new Uint8Array([0, 15, 255])), '000fff');
    assert.deepEqual(hexDecode('000FfF'), new Uint8Array([0, 15, 255]));
    assert.throws(() => hexDecode('abc'), TypeError);
    assert.throws(() => hexDecode('zz'), TypeError);
  });
});

describe('public surface', () => {
  it('re-exports the hashing, planning, proof, verification, memory-tree and note functions from index.ts', () => {
    const names = [
      'leafHash',
      'nodeHash',
      'EMPTY_ROOT',
      'rangeNodes',
      'nodesCompletedByAppend',
      'childrenOf',
      'inclusionPlan',
      'consistencyPlan',
      'rootPlan',
      'foldPlan',
      'treeRoot',
      'inclusionProof',
      'consistencyProof',
      'verifyInclusion',
      'rootFromInclusionProof',
      'verifyConsistency',
      'createMemoryTree',
      'formatCheckpoint',
      'parseCheckpoint',
      'noteKeyHash',
      'signNote',
      'verifyNote',
      'splitNote',
      'formatVerifierKey',
      'parseVerifierKey',
    ];
    for (const n of names) assert.ok(n in tlog, `index.ts exports ${n}`);
  });
});
