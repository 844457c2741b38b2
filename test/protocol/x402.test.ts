// The x402 wire lives in the protocol package (the service stands on it); the client package's x402
// module re-exports it, so a payer's imports are what they were.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as wire from '@escrow-settlement/protocol/x402';
import * as clientX402 from '@escrow-settlement/client/x402';
import * as client from '@escrow-settlement/client';
import { ERROR_STATUS } from '@escrow-settlement/protocol/errors';

test('the payment refusals are the 402 codes other than payment_required, each once', () => {
  const codes402 = Object.entries(ERROR_STATUS)
    .filter(([code, status]) => status === 402 && code !== 'payment_required')
    .map(([code]) => code);
  assert.deepEqual([...wire.X402_PAYMENT_REFUSALS].sort(), codes402.sort());
});

test("the client's x402 module and its index give the protocol's x402 values themselves", () => {
  const names = Object.keys(wire);
  assert.ok(names.includes('X402_HEADERS') && names.includes('decodeBase64Json'), names.join(', '));
  for (const name of names) {
    assert.equal((clientX402 as Record<string, unknown>)[name], (wire as Record<string, unknown>)[name], name);
    assert.equal((client as Record<string, unknown>)[name], (wire as Record<string, unknown>)[name], name);
  }
});

test('base64 JSON headers and atomic amounts read back what was written', () => {
  const value = { x402Version: 2, error: 'wrong_asset', note: 'é' };
  assert.deepEqual(wire.decodeBase64Json(wire.encodeBase64Json(value)), value);
  assert.throws(() => wire.decodeBase64Json(btoa('{'), 'PAYMENT-REQUIRED'), /PAYMENT-REQUIRED is not base64 of JSON/);
  assert.equal(wire.toAtomicAmount('0.01', 6), '10000');
  assert.equal(wire.fromAtomicAmount('10000', 6), '0.01');
  assert.throws(() => wire.toAtomicAmount('0.0000001', 6), /at most 6 fraction digits/);
});
