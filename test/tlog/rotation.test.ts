// The issuer signer is cached per key id, but which key is active is read in the statements that
// sign: a rotation made elsewhere (another instance, straight in the database) reaches this
// process's very next closing and head, with no invalidation message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import { funded } from '../fixtures.ts';
import { rotateIssuer } from '../../src/proof/keys.ts';

describeStores('issuer key cache across a rotation made elsewhere', (h) => {
  test('the next closing and the next head after another instance rotates are signed by the new key', async () => {
    const close = async () => {
      const e = await funded(h());
      const r = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 't' } });
      assert.equal(r.status, 201, r.text);
      return r.body.proof;
    };
    const before = await close(); // warms this process's signer cache with the current key
    // "Another instance": the rotation goes straight to the database, not through this app.
    const { active } = await rotateIssuer(h().db);
    assert.notEqual(active.publicKey, before.signature.signer);
    const after = await close();
    assert.equal(after.signature.signer, active.publicKey, 'the closing signed with the rotated-in key');
    const head = (await h().req('GET', '/v1/log/head')).body;
    assert.equal(head.keyId, active.keyId);
    assert.equal(head.signature.signer, active.publicKey);
    const inc = await h().req('GET', `/v1/log/proof/${after.id}`);
    assert.equal(inc.status, 200, inc.text);
    assert.equal(inc.body.head.keyId, active.keyId);
  });
});
