// Webhook registration: URL rules, the SSRF refusals at registration, and the routes' errors.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, STORES, type Harness } from '../harness.ts';
import { harnessWith } from './helpers.ts';

const KEY = 'root-key-0123456789abcdef';
const auth = { authorization: `Bearer ${KEY}` };

/** DNS stand-in for the registration check: a few names with fixed answers, everything else NXDOMAIN. */
const DNS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example.com': ['10.1.2.3'],
  'mixed.example.com': ['93.184.216.34', '127.0.0.1'],
  'v6-private.example.com': ['fd12:3456::1'],
  'mapped.example.com': ['::ffff:192.168.1.1'],
};
async function resolveHost(host: string): Promise<string[]> {
  const a = DNS[host];
  if (!a) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return a;
}

for (const kind of STORES) {
  describe(`webhook registration, hosted (private destinations refused) [${kind}]`, () => {
    let h: Harness;
    before(async () => {
      h = await harnessWith(kind, { API_KEY: KEY }, { resolveHost });
    });
    after(async () => h?.close());
    const post = (body: unknown) => h.req('POST', '/v1/webhooks', body, auth);

    test('the hosted default refuses private destinations (WEBHOOK_ALLOW_PRIVATE off)', () => {
      assert.equal(h.config.webhookAllowPrivate, false);
    });

    test('a public https URL registers, is listed once however often it is registered, and unregisters', async () => {
      const r1 = await post({ url: 'https://hooks.example.com/escrow' });
      assert.equal(r1.status, 201, r1.text);
      assert.deepEqual(Object.keys(r1.body).sort(), ['ok', 'signingKey', 'standardWebhooks', 'url']);
      assert.equal(r1.body.ok, true);
      assert.equal(r1.body.url, 'https://hooks.example.com/escrow');
      assert.match(r1.body.signingKey, /^[0-9a-f]{64}$/);
      assert.match(
        r1.body.standardWebhooks.secret,
        /^whsec_[A-Za-z0-9+/]{43}=$/,
        'a fresh secret, shown by the registration that creates it',
      );
      assert.equal(r1.body.standardWebhooks.publicKey, `whpk_${Buffer.from(r1.body.signingKey, 'hex').toString('base64')}`);
      const r2 = await post({ url: 'HTTPS://Hooks.Example.com:443/escrow' });
      assert.equal(r2.status, 201);
      assert.equal(r2.body.url, 'https://hooks.example.com/escrow', 'the normalised spelling');
      assert.deepEqual(r2.body.standardWebhooks, { publicKey: r1.body.standardWebhooks.publicKey }, 'the secret is shown once');
      const list = await h.req('GET', '/v1/webhooks', undefined, auth);
      assert.deepEqual(list.body, {
        webhooks: ['https://hooks.example.com/escrow'],
        endpoints: [{ url: 'https://hooks.example.com/escrow', disabled: false }],
        signingKey: r1.body.signingKey,
      });
      const issuer = (await h.req('GET', '/health')).body.issuer;
      assert.notEqual(r1.body.signingKey, issuer, 'the webhook key is not the issuer key');
      const del = await h.req('DELETE', '/v1/webhooks', { url: 'https://hooks.example.com/escrow' }, auth);
      assert.deepEqual([del.status, del.body], [200, { ok: true, url: 'https://hooks.example.com/escrow' }]);
      assert.deepEqual((await h.req('GET', '/v1/webhooks', undefined, auth)).body.webhooks, []);
    });

    const bad: Array<[string, unknown, RegExp]> = [
      ['no body', undefined, /request body is required/],
      ['a missing url', {}, /^url is required/],
      ['a url that is not a string', { url: 42 }, /^url must be a string/],
      ['an empty url', { url: '' }, /^url must not be empty/],
      ['an unknown field', { url: 'https://hooks.example.com/x', secret: 'x' }, /^secret is not a known field/],
      ['a relative url', { url: '/hooks/escrow' }, /^url must be an absolute http\(s\) URL/],
      ['a url without a scheme', { url: 'hooks.example.com/x' }, /^url must be an absolute http\(s\) URL/],
      ['an ftp url', { url: 'ftp://hooks.example.com/x' }, /^url must use http or https, not ftp/],
      ['a javascript: url', { url: 'javascript:alert(1)' }, /^url must use http or https/],
      ['a url over 2048 characters', { url: `https://hooks.example.com/${'a'.repeat(2030)}` }, /^url must be at most 2048 characters/],
      ['a url with credentials', { url: 'https://user:pw@hooks.example.com/x' }, /^url must not contain credentials/],
      ['a loopback IPv4 host', { url: 'http://127.0.0.1:8080/x' }, /^url host 127\.0\.0\.1 is not a public address/],
      ['an IPv4 host in hex form', { url: 'http://0x7f.0.0.1/x' }, /^url host 127\.0\.0\.1 is not a public address/],
      ['a private IPv4 host', { url: 'http://10.0.0.8/x' }, /not a public address/],
      ['a link-local metadata host', { url: 'http://169.254.169.254/latest/meta-data' }, /not a public address/],
      ['a CGNAT host', { url: 'http://100.64.1.1/x' }, /not a public address/],
      ['the unspecified address', { url: 'http://0.0.0.0/x' }, /not a public address/],
      ['an IPv6 loopback host', { url: 'http://[::1]/x' }, /^url host ::1 is not a public address/],
      ['an IPv4-mapped IPv6 loopback host', { url: 'http://[::ffff:127.0.0.1]/x' }, /not a public address/],
      ['a ULA IPv6 host', { url: 'http://[fd00::1]/x' }, /not a public address/],
      ['localhost', { url: 'http://localhost:3000/x' }, /^url host localhost is this machine/],
      ['a *.localhost name', { url: 'http://api.localhost/x' }, /is this machine/],
      [
        'a name resolving to a private address',
        { url: 'https://internal.example.com/x' },
        /^url host internal\.example\.com resolves to 10\.1\.2\.3/,
      ],
      ['a name with one private address among public ones', { url: 'https://mixed.example.com/x' }, /resolves to 127\.0\.0\.1/],
      ['a name resolving to a ULA address', { url: 'https://v6-private.example.com/x' }, /resolves to fd12:3456::1/],
      ['a name resolving to an IPv4-mapped private address', { url: 'https://mapped.example.com/x' }, /resolves to ::ffff:192\.168\.1\.1/],
      ['a name that does not resolve', { url: 'https://nowhere.example.com/x' }, /could not be resolved \(ENOTFOUND\)/],
    ];
    for (const [what, body, message] of bad) {
      test(`registration refuses ${what} with 400 naming the field`, async () => {
        const msg = expectError(await post(body), 400, 'bad_request');
        assert.match(msg, message);
      });
    }

    test('nothing refused was registered', async () => {
      assert.deepEqual((await h.req('GET', '/v1/webhooks', undefined, auth)).body.webhooks, []);
    });

    test('every webhook route needs the bearer key', async () => {
      expectError(await h.req('POST', '/v1/webhooks', { url: 'https://hooks.example.com/x' }), 401, 'unauthorized');
      expectError(await h.req('GET', '/v1/webhooks'), 401, 'unauthorized');
      expectError(await h.req('DELETE', '/v1/webhooks', { url: 'https://hooks.example.com/x' }), 401, 'unauthorized');
      expectError(await h.req('GET', '/v1/webhooks/dead-letters'), 401, 'unauthorized');
      expectError(await h.req('POST', '/v1/webhooks/dead-letters/dlr_x/redeliver'), 401, 'unauthorized');
    });

    test('DELETE of a URL that is not registered is 404, and of a malformed one 400', async () => {
      expectError(await h.req('DELETE', '/v1/webhooks', { url: 'https://hooks.example.com/never' }, auth), 404, 'not_found');
      expectError(await h.req('DELETE', '/v1/webhooks', { url: 'not a url' }, auth), 400, 'bad_request');
      expectError(await h.req('DELETE', '/v1/webhooks', {}, auth), 400, 'bad_request');
    });

    test('redelivering an unknown dead letter is 404; a body with fields is 400', async () => {
      expectError(
        await h.req('POST', '/v1/webhooks/dead-letters/dlr_01hzzzzzzzzzzzzzzzzzzzzzzz/redeliver', undefined, auth),
        404,
        'not_found',
      );
      expectError(await h.req('POST', '/v1/webhooks/dead-letters/dlr_x/redeliver', { force: true }, auth), 400, 'bad_request');
    });

    test('the dead-letter list starts empty', async () => {
      assert.deepEqual((await h.req('GET', '/v1/webhooks/dead-letters', undefined, auth)).body, { deadLetters: [] });
    });
  });
}

describeStores('webhook registration, open sandbox (private destinations allowed)', (h) => {
  test('the sandbox default allows loopback receivers, so a local dev server can listen', async () => {
    assert.equal(h().config.webhookAllowPrivate, true);
    const r = await h().req('POST', '/v1/webhooks', { url: 'http://localhost:9999/hook' });
    assert.equal(r.status, 201, r.text);
    assert.equal((await h().req('DELETE', '/v1/webhooks', { url: 'http://localhost:9999/hook' })).status, 200);
  });
});

describeStores(
  'webhook registration with WEBHOOK_ALLOW_PRIVATE off and no resolver',
  (h) => {
    test('without an injected resolver, literal private hosts and localhost are refused and names pass to the delivery-time check', async () => {
      expectError(await h().req('POST', '/v1/webhooks', { url: 'http://192.168.0.1/x' }), 400, 'bad_request');
      expectError(await h().req('POST', '/v1/webhooks', { url: 'http://localhost/x' }), 400, 'bad_request');
      assert.equal((await h().req('POST', '/v1/webhooks', { url: 'https://hooks.example.org/x' })).status, 201);
    });
  },
  { WEBHOOK_ALLOW_PRIVATE: 'off' },
);
