// Webhook URL identity: every spelling of one endpoint is one URL (the canonical form), so "one owner
// per URL" holds however it is written; and every delivery names and signs its destination, so a
// delivery captured at one receiver does not verify at another (docs/security.md).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
after(() => process.stdout.write(`# identity spellings tried: ${IDENTITY_CASES.spellings}\n`));
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { HOSTED, mint, withKey } from '../admin/helpers.ts';
import { canonicalUrl } from '../../src/webhooks/canonicalUrl.ts';
import { drain, receiver, type Receiver } from './helpers.ts';

/** Deterministic PRNG (mulberry32) so a failing spelling can be reproduced from its seed. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Another spelling of `base` (scheme case, host case, default port, escapes of unreserved, ?, #, ./). */
function respell(base: URL, r: () => number): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const scheme = pick([base.protocol.slice(0, -1), base.protocol.slice(0, -1).toUpperCase()]);
  const host =
    [...base.hostname].map((c) => (r() < 0.5 ? c.toUpperCase() : c)).join('') +
    (r() < 0.2 && /[a-z]/.test(base.hostname) && !base.hostname.startsWith('[') ? '.' : '');
  const port = base.port ? `:${base.port}` : r() < 0.5 ? (base.protocol === 'https:' ? ':443' : ':80') : '';
  const esc = (s: string) =>
    [...s]
      .map((c) =>
        /[A-Za-z0-9\-._~]/.test(c) && r() < 0.4 ? `%${c.charCodeAt(0).toString(16)[r() < 0.5 ? 'toUpperCase' : 'toLowerCase']()}` : c,
      )
      .join('');
  const path = base.pathname
    .split('/')
    .map((seg) => (seg === '' ? seg : esc(seg)))
    .join('/')
    .replace(/^\//, r() < 0.3 ? '/./' : '/');
  const query = base.search ? `?${esc(base.search.slice(1))}` : r() < 0.5 ? '?' : '';
  const frag = pick(['', '#', '#section', '#x?y']);
  return `${scheme}://${host}${port}${path}${query}${frag}`;
}

export const IDENTITY_CASES = { spellings: 0 };

test('canonical form: every generated respelling of a URL maps to the same form, and the form is a fixed point', () => {
  const bases = [
    'https://hooks.example.com/escrow/events',
    'http://127.0.0.1:8080/a/b~c',
    'https://h.example/p-q_r.s?x=1&y=tilde~',
    'http://[::1]:9000/hook',
    'https://xn--bcher-kva.example/',
  ];
  const r = rng(20261125);
  for (const b of bases) {
    const want = canonicalUrl(b);
    assert.equal(canonicalUrl(want), want);
    for (let i = 0; i < 400; i++) {
      const s = respell(new URL(b), r);
      assert.equal(canonicalUrl(s), want, `${s} (from ${b})`);
      IDENTITY_CASES.spellings++;
    }
  }
  // What must stay apart: a reserved character and its escape, another path, another query.
  assert.notEqual(canonicalUrl('https://h.example/a%2Fb'), canonicalUrl('https://h.example/a/b'));
  assert.notEqual(canonicalUrl('https://h.example/a?x=1'), canonicalUrl('https://h.example/a?x=2'));
  assert.notEqual(canonicalUrl('https://h.example/a'), canonicalUrl('https://h.example/a/'));
  assert.equal(canonicalUrl('https://h.example/a%2fb'), 'https://h.example/a%2Fb');
});

describeStores(
  'webhook URL identity',
  (h) => {
    let a: Harness;
    let b: Harness;
    const rxs: Receiver[] = [];
    after(async () => {
      for (const r of rxs) await r.close();
    });

    test('another key registering an equivalent spelling of a registered URL gets 409, whatever the spelling', async () => {
      a = withKey(h(), (await mint(h(), { label: 'a' })).secret);
      b = withKey(h(), (await mint(h(), { label: 'b' })).secret);
      const rx = await receiver();
      rxs.push(rx);
      const port = new URL(rx.url).port;
      const reg = await a.req('POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hook?` });
      assert.equal(reg.status, 201, reg.text);
      assert.equal(reg.body.url, `http://127.0.0.1:${port}/hook`, 'the answer names the canonical form');
      for (const spelling of [
        `http://127.0.0.1:${port}/hook`,
        `HTTP://127.0.0.1:${port}/hook#frag`,
        `http://127.0.0.1:${port}/%68ook`,
        `http://127.0.0.1:${port}/%68%6F%6f%6B?#`,
        `http://127.0.0.1:${port}/x/../hook`,
        `http://127.0.0.1.:${port}/hook`,
        `http://0x7f.0.0.1:${port}/./hook`,
      ]) {
        assert.match(
          expectError(await b.req('POST', '/v1/webhooks', { url: spelling }), 409, 'invalid_state'),
          /registered by another key/,
          spelling,
        );
      }
      // DELETE takes any spelling too.
      assert.equal((await a.req('DELETE', '/v1/webhooks', { url: `http://127.0.0.1:${port}/%68ook#x` })).status, 200);
      assert.deepEqual((await a.req('GET', '/v1/webhooks')).body.webhooks, []);
    });

    test('each delivery names its destination under a signature: it verifies there, and not at another receiver pinning the same key', async () => {
      const one = await receiver();
      const two = await receiver();
      rxs.push(one, two);
      const r1 = await a.req('POST', '/v1/webhooks', { url: one.url });
      const r2 = await b.req('POST', '/v1/webhooks', { url: two.url });
      assert.equal(r1.status, 201);
      assert.equal(r2.status, 201);
      await settled(a);
      await settled(b);
      await drain(h().app.svc);
      assert.ok(one.got.length > 0 && two.got.length > 0);
      const wh = new Webhook(r1.body.standardWebhooks.secret);
      for (const g of one.got) {
        assert.equal(g.headers['x-proof-destination'], r1.body.url);
        assert.match(g.headers['x-proof-destination-signature'], /^[0-9a-f]{128}$/);
        // The Standard Webhooks wire stays valid: the official package accepts the delivery.
        assert.ok(wh.verify(g.body, g.headers));
        assert.equal(verifyWebhook(g.body, g.headers, r1.body.signingKey, { destination: r1.body.url }).ok, true);
        // Replayed to the other receiver (which pins the same deployment key): refused.
        const there = verifyWebhook(g.body, g.headers, r2.body.signingKey, { destination: r2.body.url });
        assert.equal(there.ok, false);
        assert.match(there.reason!, /x-proof-destination names .* not this endpoint/);
        // Rewriting the header to name the other receiver breaks its signature.
        const forged = verifyWebhook(g.body, { ...g.headers, 'x-proof-destination': r2.body.url }, r2.body.signingKey, {
          destination: r2.body.url,
        });
        assert.equal(forged.ok, false);
        assert.match(forged.reason!, /x-proof-destination-signature does not verify/);
        // So does another body or another timestamp under the same destination signature.
        const other = two.got[0];
        const swapped = verifyWebhook(
          other.body,
          {
            ...g.headers,
            'webhook-signature': other.headers['webhook-signature'],
            'webhook-id': other.headers['webhook-id'],
            'webhook-timestamp': other.headers['webhook-timestamp'],
          },
          r1.body.signingKey,
          { destination: r1.body.url },
        );
        assert.equal(swapped.ok, false);
      }
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on' },
);
