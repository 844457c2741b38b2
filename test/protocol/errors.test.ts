// One error contract: the service answers exactly the codes the protocol package defines, with the
// same statuses, and the client's envelope reader takes what the service writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_STATUS, isErrorCode, readErrorEnvelope } from '@escrow-settlement/protocol/errors';
import { AppError, ERROR_CODES, errorBody } from '../../src/errors.ts';

test('the service has a cause and fix for every protocol error code, with the protocol status, and no other code', () => {
  assert.deepEqual(Object.keys(ERROR_CODES).sort(), Object.keys(ERROR_STATUS).sort());
  for (const [code, e] of Object.entries(ERROR_CODES)) assert.equal(e.status, ERROR_STATUS[code as keyof typeof ERROR_STATUS], code);
});

test('every envelope the service writes reads back through the protocol reader with its code', () => {
  for (const code of Object.keys(ERROR_STATUS) as Array<keyof typeof ERROR_STATUS>) {
    const { status, body } = errorBody(new AppError(code, `a ${code}`));
    assert.equal(status, ERROR_STATUS[code]);
    assert.deepEqual(readErrorEnvelope(JSON.parse(JSON.stringify(body))), { code, message: `a ${code}`, docsUrl: `/docs/errors#${code}` });
    assert.equal(isErrorCode(code), true);
  }
  assert.equal(readErrorEnvelope('<html>bad gateway</html>'), null);
  assert.equal(readErrorEnvelope({ error: { code: 1, message: 'x' } }), null);
  assert.equal(isErrorCode('toString'), false, 'an Object.prototype name is not a code');
});
