// GET /v1/admin/metrics: the exact shape of docs/protocol.md §22, and counts that follow what happens; the request-log hook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp, type RequestLogRecord } from '../../src/app.ts';
import { describeStores, type Harness } from '../harness.ts';
import { escrow, settled } from '../fixtures.ts';
import { bearer, HOSTED, mint, ROOT, withKey } from './helpers.ts';

const SHAPE = {
  escrows: ['byState', 'total'],
  proofs: ['issued'],
  refunds: ['afterRelease', 'total'],
  log: ['size'],
  webhooks: ['deadLettered', 'delivered', 'failed', 'pending'],
  rateLimit: ['rejected'],
  apiKeys: ['active', 'revoked'],
  requestLog: ['lines', 'rotations'],
};
const STATES = ['created', 'delivered', 'disputed', 'funded', 'refunded', 'resolved', 'settled'];

async function metricsOf(h: Harness) {
  const res = await h.req('GET', '/v1/admin/metrics', undefined, bearer(ROOT));
  assert.equal(res.status, 200, res.text);
  return res.body;
}

describeStores(
  'operator metrics',
  (h) => {
    test('the metrics page has exactly the documented fields, every count a whole number', async () => {
      const m = await metricsOf(h());
      assert.deepEqual(Object.keys(m).sort(), [...Object.keys(SHAPE), 'uptimeSeconds', 'version'].sort());
      for (const [group, fields] of Object.entries(SHAPE)) assert.deepEqual(Object.keys(m[group]).sort(), fields, group);
      assert.deepEqual(Object.keys(m.escrows.byState).sort(), STATES);
      const numbers = [
        m.escrows.total,
        ...Object.values(m.escrows.byState),
        m.proofs.issued,
        m.refunds.afterRelease,
        m.log.size,
        ...Object.values(m.webhooks),
        m.rateLimit.rejected,
        m.apiKeys.active,
        m.apiKeys.revoked,
        m.requestLog.lines,
        m.requestLog.rotations,
        m.uptimeSeconds,
      ];
      for (const n of numbers) assert.ok(Number.isInteger(n) && (n as number) >= 0, `${n}`);
      assert.equal(m.version, '0.5.0');
      assert.deepEqual(m.requestLog, { lines: 0, rotations: 0 });
    });

    test('escrow, proof and log counts follow the lifecycle', async () => {
      const root = withKey(h(), ROOT);
      const m0 = await metricsOf(h());
      await escrow(root);
      await settled(root);
      const m1 = await metricsOf(h());
      assert.equal(m1.escrows.total, m0.escrows.total + 2);
      assert.equal(m1.escrows.byState.created, m0.escrows.byState.created + 1);
      assert.equal(m1.escrows.byState.settled, m0.escrows.byState.settled + 1);
      assert.equal(m1.proofs.issued, m0.proofs.issued + 1);
      assert.equal(m1.log.size, m0.log.size + 1);
      // A refund after release is counted, with its amount, and is a leaf of the log too.
      const s = await settled(root);
      const r = await root.req('POST', `/v1/escrows/${s.id}/refunds`, { amount: '2.5', agentIds: [s.payee.id] });
      assert.equal(r.status, 201, r.text);
      const m2 = await metricsOf(h());
      assert.equal(m2.refunds.afterRelease, m1.refunds.afterRelease + 1);
      assert.equal(Number(m2.refunds.total), Number(m1.refunds.total) + 2.5);
      assert.equal(m2.proofs.issued, m1.proofs.issued + 2);
    });

    test('API key counts follow minting and revocation', async () => {
      const m0 = await metricsOf(h());
      const k = await mint(h());
      await mint(h());
      await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      const m1 = await metricsOf(h());
      assert.deepEqual(m1.apiKeys, { active: m0.apiKeys.active + 1, revoked: m0.apiKeys.revoked + 1 });
    });

    test('webhook counters are read from the database', async () => {
      const m0 = await metricsOf(h());
      await h().db.query(
        'UPDATE webhook_counters SET delivered = delivered + 3, failed = failed + 2, dead_lettered = dead_lettered + 1 WHERE id = 1',
      );
      const m1 = await metricsOf(h());
      assert.deepEqual(m1.webhooks, {
        delivered: m0.webhooks.delivered + 3,
        failed: m0.webhooks.failed + 2,
        deadLettered: m0.webhooks.deadLettered + 1,
        pending: m0.webhooks.pending,
      });
    });

    test('each 429 adds one to the lifetime rejection count', async () => {
      const k = await mint(h(), { rateLimitMax: 1 });
      const m0 = await metricsOf(h());
      for (let i = 0; i < 3; i++) await h().req('GET', '/v1/escrows', undefined, bearer(k.secret));
      const m1 = await metricsOf(h());
      assert.equal(m1.rateLimit.rejected, m0.rateLimit.rejected + 2);
    });

    test('app.fetch hands one record per request to the request log, with the route pattern and never a secret', async () => {
      const records: RequestLogRecord[] = [];
      const app = createApp({
        db: h().db,
        config: h().config,
        requestLog: { write: (r) => records.push(r), stats: () => ({ lines: records.length, rotations: 7 }) },
      });
      const k = await mint(h(), { label: 'logged' });
      const call = (path: string, init: RequestInit = {}) => app.fetch(new Request(`http://t${path}`, init), { ip: '203.0.113.9' });
      await call('/v1/escrows/esc_01hzzzzzzzzzzzzzzzzzzzzzzz', { headers: bearer(k.secret) });
      await call('/v1/agents', { method: 'POST', headers: bearer(k.secret), body: '{"label":"body-is-not-logged"}' });
      await call('/v1/escrows', { headers: bearer('esk_wrong') });
      await call('/nowhere', { headers: { 'x-request-id': 'rid-1' } });
      const m = await (await call('/v1/admin/metrics', { headers: bearer(ROOT) })).json();
      assert.deepEqual(m.requestLog, { lines: 4, rotations: 7 });

      assert.equal(records.length, 5);
      for (const r of records) {
        assert.deepEqual(Object.keys(r).sort(), ['at', 'durationMs', 'ip', 'keyId', 'method', 'requestId', 'route', 'status']);
        assert.equal(r.ip, '203.0.113.9');
        assert.ok(r.durationMs >= 0);
        assert.equal(new Date(r.at).toISOString(), r.at);
      }
      assert.deepEqual(
        records.map((r) => [r.method, r.route, r.status, r.keyId]),
        [
          ['GET', '/v1/escrows/:id', 404, k.id],
          ['POST', '/v1/agents', 201, k.id],
          ['GET', '/v1/escrows', 401, null],
          ['GET', null, 404, null],
          ['GET', '/v1/admin/metrics', 200, 'root'],
        ],
      );
      assert.equal(records[3].requestId, 'rid-1');
      const text = JSON.stringify(records);
      for (const secret of [k.secret, ROOT, 'esk_wrong', 'body-is-not-logged', 'Bearer']) assert.ok(!text.includes(secret), secret);
    });

    test('a request log that throws never fails the request', async () => {
      const app = createApp({
        db: h().db,
        config: h().config,
        requestLog: {
          write: () => {
            throw new Error('disk full');
          },
          stats: () => ({ lines: 0, rotations: 0 }),
        },
      });
      const res = await app.fetch(new Request('http://t/health'));
      assert.equal(res.status, 200);
    });
  },
  { ...HOSTED, PUBLIC_RATE_LIMIT_MAX: '100000' },
);
