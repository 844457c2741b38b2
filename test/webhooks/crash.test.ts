// At-least-once across a crash: the real service as a child process, SIGKILLed while a delivery is in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { receiver, waitFor } from './helpers.ts';

async function call(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** A settled escrow made over HTTP: five events (created, funded, submitted, passed, proof issued). */
async function lifecycle(base: string): Promise<string> {
  const payer = await call(base, 'POST', '/v1/agents', { label: 'payer' });
  const payee = await call(base, 'POST', '/v1/agents', { label: 'payee' });
  const terms = { description: 'a titled report', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
  const e = await call(base, 'POST', '/v1/escrows', { amount: '3', asset: 'USDC', terms, payerAgentId: payer.id, payeeAgentId: payee.id });
  await call(base, 'POST', `/v1/escrows/${e.id}/fund`);
  await call(base, 'POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'done' } });
  return e.id;
}

test('a service killed with SIGKILL mid-delivery loses no event: restarted on the same DATA_DIR it delivers every one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-wh-'));
  // Until the crash the receiver takes requests and never answers (nothing is recorded); then it is good.
  let up = false;
  const rx = await receiver(() => (up ? 200 : 'hang'));
  const env = { DATA_DIR: dir, WEBHOOK_BACKOFF_MS: '100,100,100,100', WEBHOOK_TIMEOUT_MS: '1500', SWEEP_INTERVAL_MS: '60000' };
  let first: Proc | undefined;
  let second: Proc | undefined;
  try {
    first = await startService(TSX, env);
    const { signingKey } = await call(first.url, 'POST', '/v1/webhooks', { url: rx.url });
    const ids = [await lifecycle(first.url), await lifecycle(first.url), await lifecycle(first.url)];
    await waitFor(() => rx.seen >= 1, 'a delivery to be in flight');
    first.child.kill('SIGKILL');
    await first.exited;
    up = true;

    second = await startService(TSX, env);
    const events: any[] = [];
    for (const id of ids) events.push(...(await call(second.url, 'GET', `/v1/escrows/${id}/events`)).events);
    assert.equal(events.length, 15);
    const bodies = () => new Set(rx.got.map((g) => g.body));
    // The in-flight row is due again when its lease (timeout + 5 s margin) runs out.
    await waitFor(() => events.every((e) => bodies().has(canonicalize(e))), 'every event to arrive after the restart', 30_000);
    for (const g of rx.got) assert.equal(verifyWebhook(g.body, g.headers, signingKey).ok, true);
    for (const id of ids) {
      // Up to WEBHOOK_CONCURRENCY requests per URL are in flight, so arrivals may interleave; each
      // event's webhook-id says where it belongs in its escrow's trail.
      const seen = new Set(rx.got.map((g) => g.headers['webhook-id']).filter((w) => w.startsWith(`${id}_`)));
      assert.deepEqual(
        [...seen].sort(),
        [0, 1, 2, 3, 4].map((n) => `${id}_${n}`),
        'every event of the escrow, by its trail position',
      );
    }
    assert.deepEqual((await call(second.url, 'GET', '/v1/webhooks/dead-letters')).deadLetters, []);
    assert.equal(await second.stop('SIGTERM'), 0, second.stderr());
  } finally {
    if (first && first.child.exitCode === null) first.child.kill('SIGKILL');
    if (second && second.child.exitCode === null) second.child.kill('SIGKILL');
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
