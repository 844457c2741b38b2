// The PKCS#11 module is PKCS11_MODULE alone (docs/keys.md "PKCS#11"): a pkcs11: source naming
// module-path or module-name, in a rotation's body or in a stored era, is refused and nothing is
// loaded. A real shared library whose constructor writes a marker file shows it: the library is never
// loaded into the process. The start-up case is test/process/pkcs11Module.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { describeStores, expectError, TEST_KEYS } from '../harness.ts';
import { bearer, HOSTED, ROOT, withKey } from '../admin/helpers.ts';
import { settled } from '../fixtures.ts';
import { receiver, unregister } from '../webhooks/helpers.ts';
import { sendDueOnce } from '../../src/jobs/webhooks.ts';
import { parseConfig } from '../../src/config.ts';
import { nodeKeySources } from '../../src/node/serviceKeys.ts';
import { ensureKeys } from '../../src/proof/keyEras.ts';
import { keyIdOf } from '../../src/proof/keys.ts';
import { ConfigError } from '../../src/errors.ts';
import { markerLib } from './markerLib.ts';

const ORIGIN = parseConfig({}).logOrigin;
const lib = markerLib();
const errors: string[] = [];

/** Sources naming the marker library, each way a URI can name a module. */
const naming = () => [
  `pkcs11:object=x?module-path=${lib.path}`,
  `pkcs11:token=t;object=x;type=private?pin-source=file:/dev/null&module-path=${encodeURIComponent(lib.path)}`,
  'pkcs11:object=x?module-name=marker',
];

describeStores(
  'a pkcs11: source cannot choose the PKCS#11 module',
  (h) => {
    test('a rotation to a source naming module-path or module-name is 400 naming key, loads nothing and changes nothing', async () => {
      const before = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys;
      for (const key of naming()) {
        const msg = expectError(await h().req('POST', '/v1/admin/issuer/rotate', { key }, bearer(ROOT)), 400, 'bad_request');
        assert.match(msg, /^key: pkcs11: URI names module-(path|name): the PKCS#11 module is PKCS11_MODULE alone/);
        assert.equal(lib.loaded(), false, `${key} loaded the library`);
      }
      assert.deepEqual((await h().req('GET', '/.well-known/proof-issuer.json')).body.keys, before);
    });

    test('a stored era whose source names module-path is refused, said so, and never loaded, however often it is asked for', async () => {
      const db = h().db;
      const pub = toHex(generateKeyPair().publicKey);
      const keyId = keyIdOf('issuer', Buffer.from(pub, 'hex'));
      // What someone who can write the database would do: make such a row the active issuer era.
      const [old] = await db.query<{ key_id: string }>(
        `UPDATE service_keys SET valid_until = svc_now() WHERE purpose = 'issuer' AND valid_until IS NULL RETURNING key_id`,
      );
      await db.query(
        `INSERT INTO service_keys (key_id, purpose, public_key, source, valid_from) VALUES ($1, 'issuer', $2, $3, svc_now())`,
        [keyId, pub, naming()[0]],
      );
      try {
        errors.length = 0;
        for (let i = 0; i < 3; i++) {
          const head = await h().req('GET', '/v1/log/head');
          assert.equal(head.status, 500, head.text);
          assert.doesNotMatch(head.text, /module|libmarker/, 'the public answer does not tell the refusal');
        }
        assert.equal(lib.loaded(), false, 'the library was loaded');
        assert.ok(errors.length >= 3);
        for (const e of errors)
          assert.match(e, new RegExp(`issuer key ${keyId}: its stored source is refused, nothing was loaded .*names module-path`));
        // At start the same era stops the start with one line, and loads nothing.
        await assert.rejects(
          ensureKeys(db, TEST_KEYS, nodeKeySources({ logOrigin: ORIGIN })),
          (err: unknown) => err instanceof ConfigError && /its stored source is refused, nothing was loaded/.test(err.message),
        );
        assert.equal(lib.loaded(), false, 'the library was loaded at start');
      } finally {
        await db.query('DELETE FROM service_keys WHERE key_id = $1', [keyId]);
        await db.query('UPDATE service_keys SET valid_until = NULL WHERE key_id = $1', [old.key_id]);
      }
    });

    test('a stored webhook era whose source names module-path is refused by the sender and never loaded', async () => {
      const db = h().db;
      const rx = await receiver();
      const pub = toHex(generateKeyPair().publicKey);
      const keyId = keyIdOf('webhook', Buffer.from(pub, 'hex'));
      const root = withKey(h(), ROOT);
      assert.equal((await root.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
      await settled(root);
      const [old] = await db.query<{ key_id: string }>(
        `UPDATE service_keys SET valid_until = svc_now() - interval '1 day' WHERE purpose = 'webhook' AND valid_until IS NULL RETURNING key_id`,
      );
      await db.query(
        `INSERT INTO service_keys (key_id, purpose, public_key, source, valid_from) VALUES ($1, 'webhook', $2, $3, svc_now())`,
        [keyId, pub, naming()[0]],
      );
      try {
        // The claimed rows stay leased (due again when the lease ends, nothing lost); the sender's log says why.
        await assert.rejects(sendDueOnce(h().app.svc), (err: Error) =>
          new RegExp(`webhook key ${keyId}: its stored source is refused, nothing was loaded .*names module-path`).test(err.message),
        );
        assert.equal(rx.got.length, 0, 'nothing was sent unsigned');
        assert.equal(lib.loaded(), false, 'the library was loaded');
      } finally {
        await db.query('DELETE FROM service_keys WHERE key_id = $1', [keyId]);
        await db.query('UPDATE service_keys SET valid_until = NULL WHERE key_id = $1', [old.key_id]);
        await unregister(root, rx.url);
        await rx.close();
      }
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on' },
  { keySources: nodeKeySources({ logOrigin: ORIGIN }), onError: (err) => errors.push(String((err as Error)?.message ?? err)) },
);

before(() => assert.equal(lib.loaded(), false));
after(() => assert.equal(lib.loaded(), false, 'the marker library was loaded'));
