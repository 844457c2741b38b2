// Rate limiting: per-key budgets, per-IP public and verify budgets, headers, counters, and the shared limiter (docs/protocol.md §18.4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config.ts';
import { createApp } from '../../src/app.ts';
import { createRateLimiter } from '../../src/http/rateLimit.ts';
import { describeStores, expectError, type Res } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { bearer, HOSTED, mint, ROOT, withKey } from './helpers.ts';

// A day-long window (aligned to UTC days): a test's few requests never straddle a window boundary.
const WINDOW_MS = 86_400_000;
const LONG_WINDOW = { RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) };

/** Asserts the RateLimit-* headers; returns Reset in seconds. */
function rateHeaders(res: Res, limit: number, remaining: number): number {
  assert.equal(res.headers.get('ratelimit-limit'), String(limit), res.text);
  assert.equal(res.headers.get('ratelimit-remaining'), String(remaining));
  const reset = Number(res.headers.get('ratelimit-reset'));
  assert.ok(Number.isInteger(reset) && reset >= 1 && reset <= WINDOW_MS / 1000, `RateLimit-Reset ${reset}`);
  return reset;
}

function expect429(res: Res, limit: number): void {
  assert.match(expectError(res, 429, 'rate_limited'), /retry after \d+ s/);
  const reset = rateHeaders(res, limit, 0);
  assert.equal(res.headers.get('retry-after'), String(reset));
}

const ip = (n: number) => ({ 'x-test-ip': `198.51.100.${n}` });

describeStores(
  'rate limits on a hosted deployment',
  (h) => {
    test('a key with rateLimitMax 3 gets three requests, each telling what is left, and a 429 on the fourth', async () => {
      const k = await mint(h(), { rateLimitMax: 3 });
      for (const left of [2, 1, 0]) rateHeaders(await h().req('GET', '/v1/escrows', undefined, bearer(k.secret)), 3, left);
      expect429(await h().req('GET', '/v1/escrows', undefined, bearer(k.secret)), 3);
      // Refused locally from now on: still 429 with the same headers.
      expect429(await h().req('POST', '/v1/agents', {}, bearer(k.secret)), 3);
    });

    test('one key over budget leaves other keys and the root key untouched', async () => {
      const a = await mint(h(), { rateLimitMax: 1 });
      const b = await mint(h(), { rateLimitMax: 1 });
      assert.equal((await h().req('GET', '/v1/escrows', undefined, bearer(a.secret))).status, 200);
      expect429(await h().req('GET', '/v1/escrows', undefined, bearer(a.secret)), 1);
      assert.equal((await h().req('GET', '/v1/escrows', undefined, bearer(b.secret))).status, 200);
      assert.equal((await h().req('GET', '/v1/escrows', undefined, bearer(ROOT))).status, 200);
    });

    test('a key without rateLimitMax spends RATE_LIMIT_MAX, and error answers carry the headers too', async () => {
      const k = await mint(h());
      rateHeaders(await h().req('GET', '/v1/escrows', undefined, bearer(k.secret)), 1000, 999);
      const missing = await h().req('GET', '/v1/escrows/esc_01hzzzzzzzzzzzzzzzzzzzzzzz', undefined, bearer(k.secret));
      expectError(missing, 404, 'not_found');
      rateHeaders(missing, 1000, 998);
    });

    test('POST /v1/verify spends a strict per-IP budget of its own, apart from the log routes', async () => {
      const { proof } = await settled(withKey(h(), ROOT));
      for (const left of [1, 0]) rateHeaders(await h().req('POST', '/v1/verify', proof, ip(1)), 2, left);
      expect429(await h().req('POST', '/v1/verify', proof, ip(1)), 2);
      const other = await h().req('POST', '/v1/verify', proof, ip(2));
      assert.equal(other.status, 200, other.text);
      assert.equal(other.body.valid, true);
      rateHeaders(await h().req('GET', '/v1/log/head', undefined, ip(1)), 4, 3);
    });

    test('public log routes spend a per-IP budget', async () => {
      for (const left of [3, 2, 1, 0]) rateHeaders(await h().req('GET', '/v1/log/head', undefined, ip(3)), 4, left);
      expect429(await h().req('GET', '/v1/log/checkpoint', undefined, ip(3)), 4);
      assert.equal((await h().req('GET', '/v1/log/head', undefined, ip(4))).status, 200);
    });

    test('failed authentication spends its own unit authfail:<ip>: 401 until it is gone, then 429', async () => {
      for (const left of [2, 1, 0]) {
        const res = await h().req('GET', '/v1/escrows', undefined, { ...ip(5), ...bearer('guess-0123456789abcdef') });
        expectError(res, 401, 'unauthorized');
        rateHeaders(res, 3, left);
      }
      const refused = await h().req('GET', '/v1/escrows', undefined, ip(5));
      expect429(refused, 3);
      assert.match(refused.body.error.message, /authfail:198\.51\.100\.5/);
      // The address's public log budget is untouched by those failures (docs/protocol.md §18.4).
      const head = await h().req('GET', '/v1/log/head', undefined, ip(5));
      assert.equal(head.status, 200, head.text);
      rateHeaders(head, 4, 3);
      // The root key from that address is never locked out by them: it never fails, so never spends authfail.
      assert.equal((await h().req('GET', '/v1/escrows', undefined, { ...ip(5), ...bearer(ROOT) })).status, 200);
      const units = (await h().req('GET', '/v1/admin/rate', undefined, bearer(ROOT))).body.units;
      assert.equal(units['authfail:198.51.100.5'], 4);
      assert.equal(units['ip:198.51.100.5'], 1);
    });

    test('health and the issuer document are not limited', async () => {
      for (let i = 0; i < 6; i++) {
        const res = await h().req('GET', '/.well-known/proof-issuer.json', undefined, ip(3));
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('ratelimit-limit'), null);
      }
    });

    test("GET /v1/admin/rate shows the current window's counters by unit", async () => {
      const k = await mint(h(), { rateLimitMax: 50 });
      await h().req('GET', '/v1/escrows', undefined, bearer(k.secret));
      await h().req('GET', '/v1/escrows', undefined, bearer(k.secret));
      const before = Date.now();
      const res = await h().req('GET', '/v1/admin/rate', undefined, bearer(ROOT));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body).sort(), ['units', 'windowMs', 'windowStartedAt']);
      assert.equal(res.body.windowMs, WINDOW_MS);
      const started = Date.parse(res.body.windowStartedAt);
      assert.equal(new Date(started).toISOString(), res.body.windowStartedAt);
      assert.equal(started % WINDOW_MS, 0);
      assert.ok(started <= before + 1000 && started > before - WINDOW_MS - 1000);
      assert.equal(res.body.units[`key:${k.id}`], 2);
      assert.ok(res.body.units['key:root'] >= 1);
      assert.ok(res.body.units['ip:198.51.100.3'] >= 4);
      assert.ok(res.body.units['verify:198.51.100.1'] >= 2);
    });

    test('several instances on one database spend one shared budget', async () => {
      const k = await mint(h(), { rateLimitMax: 3 });
      const other = createApp({ db: h().db, config: h().config });
      const call = (app: typeof other) => app.fetch(new Request('http://t/v1/escrows', { headers: bearer(k.secret) }), { ip: '127.0.0.1' });
      assert.equal((await call(h().app)).status, 200);
      assert.equal((await call(other)).status, 200);
      assert.equal((await call(h().app)).status, 200);
      assert.equal((await call(other)).status, 429);
      assert.equal((await call(h().app)).status, 429);
    });
  },
  {
    ...HOSTED,
    ...LONG_WINDOW,
    RATE_LIMIT_MAX: '1000',
    PUBLIC_RATE_LIMIT_MAX: '4',
    VERIFY_RATE_LIMIT_MAX: '2',
    AUTH_FAIL_RATE_LIMIT_MAX: '3',
  },
);

describeStores(
  'rate limits in the open sandbox',
  (h) => {
    test('key routes are not limited: no 429 and no RateLimit headers past RATE_LIMIT_MAX', async () => {
      for (let i = 0; i < 4; i++) {
        const res = await h().req('GET', '/v1/escrows');
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('ratelimit-limit'), null);
      }
    });

    test('public log routes and POST /v1/verify are limited per IP in the sandbox too', async () => {
      for (const left of [1, 0]) rateHeaders(await h().req('GET', '/v1/log/head', undefined, ip(9)), 2, left);
      expect429(await h().req('GET', '/v1/log/head', undefined, ip(9)), 2);
      assert.equal((await h().req('POST', '/v1/verify', {}, ip(9))).status, 400);
      expect429(await h().req('POST', '/v1/verify', {}, ip(9)), 1);
    });
  },
  { ...LONG_WINDOW, RATE_LIMIT_MAX: '1', PUBLIC_RATE_LIMIT_MAX: '2', VERIFY_RATE_LIMIT_MAX: '1' },
);

describeStores('the shared fixed-window limiter', (h) => {
  test('a new window refills the budget and deletes past windows, so the table stays bounded', async () => {
    let now = 0;
    const rl = createRateLimiter(h().db, 1000, () => now);
    const hit = () => rl.hit({ unit: 'ip:192.0.2.1', limit: 2 });
    // Start right after a window boundary so the three hits share a window.
    const [w] = await h().db.query<{ ms: number }>('SELECT (extract(epoch FROM now()) * 1000)::float8 AS ms');
    await new Promise((r) => setTimeout(r, 1000 - (w.ms % 1000) + 5));
    const decisions = [await hit(), await hit(), await hit()];
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.ok(decisions[2].resetMs > 0 && decisions[2].resetMs <= 1000);
    assert.equal(rl.rejected, 1);
    // Refused without a query while the window lasts: the shared counter does not grow.
    const counted = async () => (await rl.snapshot()).units['ip:192.0.2.1'];
    await hit();
    assert.equal(rl.rejected, 2);
    assert.equal(await counted(), 3);
    now += 2000;
    await new Promise((r) => setTimeout(r, 1000));
    await rl.hit({ unit: 'ip:192.0.2.2', limit: 2 });
    const again = await hit();
    assert.equal(again.allowed, true);
    assert.equal(again.remaining, 1);
    const rows = await h().db.query<{ windows: number }>('SELECT count(DISTINCT window_idx)::int AS windows FROM rate_counters');
    assert.equal(rows[0].windows, 1);
  });

  test("the rejection count of an app is its limiter's, and a fresh app starts at zero", () => {
    const app = createApp({ db: h().db, config: parseConfig({ DATA_DIR: ':memory:' }) });
    assert.equal(app.svc.rateLimiter.rejected, 0);
  });
});
