// The sandbox clock (docs/protocol.md §9.4): at most 10 years per call, never past the point
// where a deadline would leave four-digit years; GET tells {now, offsetSeconds}; signed routes say now.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { escrow, funded } from '../fixtures.ts';
import { CLOCK_CEILING } from '../../src/escrow/clock.ts';
import { bearer, HOSTED, ROOT } from '../admin/helpers.ts';

const TEN_YEARS = 315_360_000;

describeStores('the sandbox clock', (h) => {
  test('GET /v1/sandbox/clock tells now and the offset; POST moves both', async () => {
    const before = (await h().req('GET', '/v1/sandbox/clock')).body;
    assert.deepEqual(Object.keys(before).sort(), ['now', 'offsetSeconds']);
    assert.equal(before.offsetSeconds, 0);
    assert.ok(Math.abs(Date.parse(before.now) - Date.now()) < 60_000);
    const moved = await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 3600 });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.offsetSeconds, 3600);
    assert.ok(Date.parse(moved.body.now) - Date.parse(before.now) >= 3600_000);
    assert.equal((await h().req('GET', '/v1/sandbox/clock')).body.offsetSeconds, 3600);
  });

  test('one call moves at most 10 years', async () => {
    const r = await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: TEN_YEARS + 1 });
    assert.match(expectError(r, 400, 'bad_request'), /advanceSeconds/);
  });

  test('the clock stops 10 years before year 9999 (400, unchanged); creating and funding keep working there', async () => {
    const start = (await h().req('GET', '/v1/sandbox/clock')).body;
    let last = start;
    for (let i = 0; i < 1000; i++) {
      const r = await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: TEN_YEARS });
      if (r.status !== 200) {
        assert.match(expectError(r, 400, 'bad_request'), new RegExp(`past ${CLOCK_CEILING.toISOString()}`));
        break;
      }
      last = r.body;
    }
    assert.ok(Date.parse(last.now) < CLOCK_CEILING.getTime());
    assert.equal((await h().req('GET', '/v1/sandbox/clock')).body.offsetSeconds, last.offsetSeconds);
    // Go as close as the bound allows, a day at a time would be slow: a year, then a day.
    for (const step of [31_536_000, 86_400]) while ((await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: step })).status === 200);
    const edge = (await h().req('GET', '/v1/sandbox/clock')).body;
    assert.ok(CLOCK_CEILING.getTime() - Date.parse(edge.now) <= 86_400_000 + 60_000, edge.now);
    // Every create and the longest deadline still work: no 500 at the end of time.
    const e = await funded(h(), { timeouts: { deliverWithinSeconds: TEN_YEARS } });
    assert.match(e.escrow.deadlineAt, /^999\d-/);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).status, 200);
    assert.equal((await escrow(h())).escrow.state, 'created');
  });

  test('client-signed routes answer with x-service-now, the clock their signatures are checked against', async () => {
    const e = await funded(h());
    const now = (await h().req('GET', '/v1/sandbox/clock')).body.now;
    const stale = await h().req('POST', `/v1/escrows/${e.id}/delivery`, {
      payload: {},
      submittedAt: '2000-01-01T00:00:00Z',
      signature: { signer: 'a'.repeat(64), signature: 'b'.repeat(128) },
    });
    assert.ok(
      Math.abs(Date.parse(stale.headers.get('x-service-now')!) - Date.parse(now)) < 60_000,
      'a refused client-signed delivery tells the clock',
    );
    // The sandbox form is signed by the service with the held key: its success has nothing to sign
    // against, so it saves the clock read (a round trip on the hot path).
    const r = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'x' } });
    assert.equal(r.status, 201);
    assert.equal(r.headers.get('x-service-now'), null);
    const bad = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'x' } });
    assert.ok(bad.status >= 400 && bad.headers.get('x-service-now'), 'a refused sandbox-form request tells it too');
  });
});

describeStores(
  'the clock on a hosted deployment',
  (h) => {
    test('POST is 403 (sandbox only); GET is served, offset 0', async () => {
      expectError(await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 10 }, bearer(ROOT)), 403, 'forbidden');
      const r = await h().req('GET', '/v1/sandbox/clock', undefined, bearer(ROOT));
      assert.equal(r.status, 200);
      assert.equal(r.body.offsetSeconds, 0);
    });
  },
  HOSTED,
);
