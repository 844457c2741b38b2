// GET /v1/webhooks/attempts: every POST the sender made, with status, error, duration and outcome,
// newest first, filtered by escrow and paged with a cursor; bad queries are 400s naming the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStores, expectError } from '../harness.ts';
import { drain, receiver, register } from './helpers.ts';

describeStores(
  'webhook attempts',
  (h) => {
    test('a failing then succeeding receiver shows each attempt with its status and outcome, per escrow and paged', async () => {
      const r = await receiver((n) => (n === 0 ? 503 : 200));
      try {
        await register(h(), r.url);
        const party = (c: string) => ({ publicKey: c.repeat(64) });
        const a = (
          await h().req('POST', '/v1/escrows', {
            amount: '1',
            asset: 'USDC',
            payer: party('a'),
            payee: party('b'),
            terms: { description: 'x', checks: [] },
          })
        ).body;
        await drain(h().app.svc);
        const b = (
          await h().req('POST', '/v1/escrows', {
            amount: '2',
            asset: 'USDC',
            payer: party('a'),
            payee: party('b'),
            terms: { description: 'y', checks: [] },
          })
        ).body;
        await drain(h().app.svc);

        const all = await h().req('GET', '/v1/webhooks/attempts');
        assert.equal(all.status, 200);
        assert.deepEqual(
          all.body.attempts.map((x: any) => [x.escrowId, x.attempt, x.status, x.outcome]),
          [
            [b.id, 1, 200, 'delivered'],
            [a.id, 2, 200, 'delivered'],
            [a.id, 1, 503, 'retry'],
          ],
        );
        const first = all.body.attempts[2];
        assert.equal(first.error, 'HTTP 503');
        assert.equal(first.event, 'escrow.created');
        assert.equal(first.index, 0);
        assert.equal(first.url, r.url);
        assert.ok(Number.isInteger(first.durationMs) && first.durationMs >= 0);
        assert.match(first.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.equal(all.body.nextCursor, undefined);

        const onlyA = await h().req('GET', `/v1/webhooks/attempts?escrowId=${a.id}`);
        assert.deepEqual(
          onlyA.body.attempts.map((x: any) => x.attempt),
          [2, 1],
        );

        const p1 = await h().req('GET', '/v1/webhooks/attempts?limit=2');
        assert.equal(p1.body.attempts.length, 2);
        assert.equal(typeof p1.body.nextCursor, 'string');
        const p2 = await h().req('GET', `/v1/webhooks/attempts?limit=2&cursor=${p1.body.nextCursor}`);
        assert.deepEqual(
          p2.body.attempts.map((x: any) => x.id),
          [all.body.attempts[2].id],
        );
        assert.equal(p2.body.nextCursor, undefined);
      } finally {
        await r.close();
      }
    });

    test('bad queries are 400 bad_request naming the parameter', async () => {
      for (const [q, field] of [
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=x', 'limit'],
        ['cursor=abc', 'cursor'],
        ['escrowId=nope', 'escrowId'],
        ['state=funded', 'state'],
        ['limit=1&limit=2', 'limit'],
      ]) {
        const msg = expectError(await h().req('GET', `/v1/webhooks/attempts?${q}`), 400, 'bad_request');
        assert.match(msg, new RegExp(field), q);
      }
    });
  },
  { WEBHOOK_BACKOFF_MS: '1' },
);
