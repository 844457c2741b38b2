// Every list route pages alike (docs/protocol.md §9.2): limit 1-1000, an opaque cursor, nextCursor while
// more exist, the whole list without limit; GET /v1/escrows filters by party agent and created range;
// a 401 carries WWW-Authenticate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness, STORES, type Harness } from '../harness.ts';
import { agent, escrow, failedDelivery, settled } from '../fixtures.ts';
import { drain, receiver, register, unregister } from '../webhooks/helpers.ts';

/** Follows nextCursor from the first page to the last; returns every page's items. */
async function pages(h: Harness, path: string, key: string, limit: number, extra = ''): Promise<{ items: any[]; count: number }> {
  const items: any[] = [];
  let cursor: string | null = null;
  let count = 0;
  const sep = path.includes('?') ? '&' : '?';
  do {
    const r = await h.req('GET', `${path}${sep}limit=${limit}${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body[key].length <= limit, `a page holds at most ${limit}`);
    assert.ok('nextCursor' in r.body, 'a paged answer always says whether more exist');
    items.push(...r.body[key]);
    cursor = r.body.nextCursor;
    if (cursor !== null) {
      assert.equal(r.body[key].length, limit, 'only a full page has a next one');
      assert.match(cursor, /^[A-Za-z0-9_-]+$/, 'the cursor is URL-safe and opaque');
    }
    count++;
    assert.ok(count < 1000, 'paging terminates');
  } while (cursor !== null);
  return { items, count };
}

/** The shared checks every list must pass: pages = whole list, limit and cursor validated. */
async function pagesLikeTheWhole(h: Harness, path: string, key: string, n: number) {
  const whole = await h.req('GET', path);
  assert.equal(whole.status, 200, whole.text);
  assert.equal('nextCursor' in whole.body && whole.body.nextCursor !== null, false, 'without limit: the whole list, no cursor');
  assert.ok(whole.body[key].length >= n, `${path} lists at least ${n}`);
  for (const limit of [1, 2, 1000]) {
    const { items, count } = await pages(h, path, key, limit);
    assert.deepEqual(items, whole.body[key], `${path} limit=${limit}: the pages, joined, are the whole list`);
    if (limit === 1) assert.equal(count, whole.body[key].length + (whole.body[key].length === 0 ? 1 : 0));
  }
  const sep = path.includes('?') ? '&' : '?';
  for (const bad of ['0', '1001', '-1', '2.5', 'ten', '']) {
    const m = expectError(await h.req('GET', `${path}${sep}limit=${bad}`), 400, 'bad_request');
    assert.match(m, /limit/);
  }
  for (const bad of ['zzz', 'c_12', '%00', 'YWJj', 'a'.repeat(100)]) {
    assert.match(expectError(await h.req('GET', `${path}${sep}limit=1&cursor=${bad}`), 400, 'bad_request'), /cursor/);
  }
  assert.match(expectError(await h.req('GET', `${path}${sep}colour=red`), 400, 'bad_request'), /colour/);
  assert.match(expectError(await h.req('GET', `${path}${sep}limit=1&limit=2`), 400, 'bad_request'), /limit/);
}

describeStores(
  'list pagination',
  (h) => {
    test('GET /v1/escrows pages by an opaque cursor, and a cursor from another list is refused', async () => {
      for (let i = 0; i < 5; i++) await escrow(h());
      await pagesLikeTheWhole(h(), '/v1/escrows', 'escrows', 5);
      const e = await escrow(h());
      assert.equal((await h().req('POST', `/v1/escrows/${e.id}/fund`)).status, 200);
      const trailCursor = (await h().req('GET', `/v1/escrows/${e.id}/trail?limit=1`)).body.nextCursor;
      assert.equal(typeof trailCursor, 'string');
      assert.match(expectError(await h().req('GET', `/v1/escrows?limit=1&cursor=${trailCursor}`), 400, 'bad_request'), /cursor/);
    });

    test('the trail and the events of an escrow page by trail index; intactUpTo describes the whole chain on every page', async () => {
      const s = await settled(h());
      await pagesLikeTheWhole(h(), `/v1/escrows/${s.id}/trail`, 'entries', 5);
      await pagesLikeTheWhole(h(), `/v1/escrows/${s.id}/events`, 'events', 5);
      const last = await h().req('GET', `/v1/escrows/${s.id}/trail?limit=2`);
      assert.equal(last.body.intactUpTo, null);
      // Break the chain at index 1: every page, even one after the break, says so.
      await h().db.query(`UPDATE trail_entries SET body = '{"tampered":true}' WHERE escrow_id = $1 AND idx = 1`, [s.id]);
      let cursor: string | null = null;
      do {
        const r: any = await h().req('GET', `/v1/escrows/${s.id}/trail?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.body.intactUpTo, 1);
        cursor = r.body.nextCursor;
      } while (cursor);
      const evCursor = (await h().req('GET', `/v1/escrows/${s.id}/events?limit=1`)).body.nextCursor;
      assert.match(expectError(await h().req('GET', `/v1/escrows/${s.id}/trail?limit=1&cursor=${evCursor}`), 400, 'bad_request'), /cursor/);
      expectError(await h().req('GET', '/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa/events?limit=1'), 404, 'not_found');
    });

    test('webhook registrations and dead letters page in registration and dead-letter order', async () => {
      const dead = await receiver(() => 500);
      const urls = ['a', 'b', 'c', 'd'].map((p) => `http://127.0.0.1:9/${p}`);
      try {
        await register(h(), ...urls, dead.url);
        await pagesLikeTheWhole(h(), '/v1/webhooks', 'webhooks', 5);
        await pagesLikeTheWhole(h(), '/v1/webhooks', 'endpoints', 5);
        const whole = (await h().req('GET', '/v1/webhooks')).body;
        assert.deepEqual(whole.webhooks.slice(-5), [...urls, dead.url], 'registration order');
        const page = (await h().req('GET', '/v1/webhooks?limit=2')).body;
        assert.equal(page.signingKey, whole.signingKey, 'a page keeps the signing key');
        await unregister(h(), ...urls);
        await failedDelivery(h());
        await drain(h().app.svc, 30_000);
        const letters = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
        assert.ok(letters.length >= 4, 'every event of the escrow was dead-lettered');
        await pagesLikeTheWhole(h(), '/v1/webhooks/dead-letters', 'deadLetters', 4);
      } finally {
        await unregister(h(), dead.url);
        await dead.close();
      }
    });

    test('the public log entries page by leaf index too, beside start/end', async () => {
      for (let i = 0; i < 3; i++) await settled(h());
      await pagesLikeTheWhole(h(), '/v1/log/entries', 'entries', 3);
      const { entries } = (await h().req('GET', '/v1/log/entries')).body;
      assert.deepEqual(
        entries.map((e: any) => e.leafIndex),
        entries.map((_: any, i: number) => i),
        'leaf order from 0',
      );
      const second = (await h().req('GET', '/v1/log/entries?limit=1')).body.nextCursor;
      assert.deepEqual((await h().req('GET', `/v1/log/entries?cursor=${second}&limit=1`)).body.entries, [entries[1]]);
      assert.equal('nextCursor' in (await h().req('GET', '/v1/log/entries?start=1&end=2')).body, false, 'start/end answer as before');
      expectError(await h().req('GET', `/v1/log/entries?cursor=${second}&start=1`), 400, 'bad_request');
      expectError(await h().req('GET', '/v1/log/entries?limit=2&end=3'), 400, 'bad_request');
    });

    test('pages are stable under concurrent inserts: nothing repeats, nothing that existed is skipped', async () => {
      const before = (await h().req('GET', '/v1/escrows')).body.escrows.map((e: any) => e.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      let inserted = 0;
      do {
        // Each page is read while new escrows are being created.
        const [r]: [any, void] = await Promise.all([
          h().req('GET', `/v1/escrows?limit=3${cursor ? `&cursor=${cursor}` : ''}`) as Promise<any>,
          escrow(h()).then(() => {
            inserted++;
          }),
        ]);
        assert.equal(r.status, 200, r.text);
        seen.push(...r.body.escrows.map((e: any) => e.id));
        cursor = r.body.nextCursor;
      } while (cursor !== null);
      assert.equal(new Set(seen).size, seen.length, 'no escrow appears twice');
      for (const id of before) assert.ok(seen.includes(id), `${id} existed before paging began and was listed`);
      assert.deepEqual(seen.slice(0, before.length), before, 'the escrows that existed come first, in creation order');
      assert.ok(inserted > 0);
    });
  },
  { WEBHOOK_BACKOFF_MS: '5,5,5,5', WEBHOOK_TIMEOUT_MS: '2000' },
);

describeStores('escrow list filters', (h) => {
  test('agentId lists the escrows where the agent is payer or payee, and pages within them', async () => {
    const a = await agent(h(), 'a');
    const others = [await agent(h(), 'b'), await agent(h(), 'c')];
    const mine: string[] = [];
    for (const o of others) {
      mine.push(
        (
          await h().req('POST', '/v1/escrows', {
            amount: '1',
            asset: 'USDC',
            terms: { description: 'd', checks: [] },
            payerAgentId: a.id,
            payeeAgentId: o.id,
          })
        ).body.id,
      );
      mine.push(
        (
          await h().req('POST', '/v1/escrows', {
            amount: '1',
            asset: 'USDC',
            terms: { description: 'd', checks: [] },
            payerAgentId: o.id,
            payeeAgentId: a.id,
          })
        ).body.id,
      );
    }
    await escrow(h());
    const r = await h().req('GET', `/v1/escrows?agentId=${a.id}`);
    assert.deepEqual(
      r.body.escrows.map((e: any) => e.id),
      mine,
    );
    for (const e of r.body.escrows) assert.ok([e.payer.publicKey, e.payee.publicKey].includes(a.publicKey));
    assert.deepEqual(
      (await pages(h(), '/v1/escrows', 'escrows', 1, `&agentId=${a.id}`)).items.map((e) => e.id),
      mine,
    );
    assert.deepEqual((await h().req('GET', `/v1/escrows?agentId=${a.id}&state=funded`)).body.escrows, []);
    assert.match(expectError(await h().req('GET', '/v1/escrows?agentId=agt_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'not_found'), /agentId/);
    assert.match(expectError(await h().req('GET', '/v1/escrows?agentId=esc_1'), 400, 'bad_request'), /agentId/);
  });

  test('createdAfter and createdBefore bound createdAt strictly, combine with paging, and name a bad value', async () => {
    const first = await escrow(h());
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 3600 });
    const second = await escrow(h());
    const t1 = first.escrow.createdAt;
    const t2 = second.escrow.createdAt;
    const ids = async (q: string) => (await h().req('GET', `/v1/escrows?${q}`)).body.escrows.map((e: any) => e.id);
    assert.ok((await ids(`createdAfter=${t1}`)).includes(second.id));
    assert.equal((await ids(`createdAfter=${t1}`)).includes(first.id), false, 'createdAfter is strict');
    assert.ok((await ids(`createdBefore=${t2}`)).includes(first.id));
    assert.equal((await ids(`createdBefore=${t2}`)).includes(second.id), false, 'createdBefore is strict');
    const window = await ids(
      `createdAfter=${encodeURIComponent(new Date(Date.parse(t1) - 1).toISOString())}&createdBefore=${encodeURIComponent(new Date(Date.parse(t1) + 1).toISOString())}`,
    );
    assert.ok(window.includes(first.id));
    assert.equal(window.includes(second.id), false);
    // Any ISO 8601 zone is accepted (docs/protocol.md §2.5).
    const plusTwo = new Date(Date.parse(t2) + 1).toISOString().replace('Z', '+00:00');
    assert.ok((await ids(`createdBefore=${encodeURIComponent(plusTwo)}&limit=1000`)).includes(second.id));
    for (const name of ['createdAfter', 'createdBefore']) {
      assert.equal((await h().req('GET', `/v1/escrows?${name}=2024-02-29T00:00:00Z&limit=1`)).status, 200, 'a leap day is a date');
      for (const bad of [
        'yesterday',
        '2026-13-40T00:00:00Z',
        '2026-11-21',
        '',
        '2026-02-30T00:00:00Z',
        '2025-02-29T00:00:00Z',
        '2026-04-31T10:00:00Z',
        '0000-01-01T00:00:00Z',
      ]) {
        assert.match(expectError(await h().req('GET', `/v1/escrows?${name}=${bad}`), 400, 'bad_request'), new RegExp(name));
      }
    }
    assert.match(expectError(await h().req('GET', '/v1/escrows?state=lost'), 400, 'bad_request'), /state/);
  });

  test('order=newest lists newest first, pages by cursor through ties on createdAt, and keeps its cursors to itself', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await escrow(h())).id);
    // The same instant for all five: the order and the pages rest on the insertion sequence alone.
    await h().db.query(`UPDATE escrows SET created_at = '2026-01-01T00:00:00Z' WHERE id = ANY($1)`, [made]);
    const oldest = (await h().req('GET', '/v1/escrows')).body.escrows.map((e: any) => e.id);
    const newest = (await h().req('GET', '/v1/escrows?order=newest')).body.escrows.map((e: any) => e.id);
    assert.deepEqual(newest, [...oldest].reverse(), 'newest is creation order reversed');
    assert.deepEqual(newest.slice(0, 5), [...made].reverse(), 'the last one created comes first');
    assert.deepEqual(
      (await h().req('GET', '/v1/escrows?order=oldest')).body.escrows.map((e: any) => e.id),
      oldest,
    );
    // Every limit's pages, joined, are the whole newest-first list; limit, cursor, unknown names are refused alike.
    await pagesLikeTheWhole(h(), '/v1/escrows?order=newest', 'escrows', 5);
    const { items } = await pages(h(), '/v1/escrows', 'escrows', 2, '&order=newest&createdBefore=2026-01-01T00:00:01Z');
    assert.deepEqual(
      items.map((e: any) => e.id),
      [...made].reverse(),
      'order combines with the filters',
    );
    // A page of one order does not continue in the other: 400 naming cursor, both ways.
    const newCursor = (await h().req('GET', '/v1/escrows?order=newest&limit=1')).body.nextCursor;
    const oldCursor = (await h().req('GET', '/v1/escrows?limit=1')).body.nextCursor;
    assert.match(expectError(await h().req('GET', `/v1/escrows?limit=1&cursor=${newCursor}`), 400, 'bad_request'), /cursor/);
    assert.match(expectError(await h().req('GET', `/v1/escrows?order=oldest&limit=1&cursor=${newCursor}`), 400, 'bad_request'), /cursor/);
    assert.match(expectError(await h().req('GET', `/v1/escrows?order=newest&limit=1&cursor=${oldCursor}`), 400, 'bad_request'), /cursor/);
    // A new escrow created while paging newest-first lands before the cursor, never inside the pages.
    const p1 = await h().req('GET', '/v1/escrows?order=newest&limit=2');
    const late = (await escrow(h())).id;
    const p2 = await h().req('GET', `/v1/escrows?order=newest&limit=2&cursor=${p1.body.nextCursor}`);
    assert.deepEqual(
      p2.body.escrows.map((e: any) => e.id),
      newest.slice(2, 4),
    );
    assert.equal((await h().req('GET', '/v1/escrows?order=newest&limit=1')).body.escrows[0].id, late);
    for (const bad of ['NEWEST', 'desc', '', 'newest ', 'latest']) {
      assert.match(expectError(await h().req('GET', `/v1/escrows?order=${encodeURIComponent(bad)}`), 400, 'bad_request'), /order/);
    }
    assert.match(expectError(await h().req('GET', '/v1/escrows?order=newest&order=newest'), 400, 'bad_request'), /order/);
  });
});

for (const kind of STORES) {
  test(`admin keys page, and every 401 carries WWW-Authenticate: Bearer [${kind}]`, async () => {
    const h = await makeHarness(kind, { API_KEY: 'root-secret-0123456789' });
    const root = { authorization: 'Bearer root-secret-0123456789' };
    try {
      for (let i = 0; i < 4; i++) assert.equal((await h.req('POST', '/v1/admin/keys', { label: `k${i}` }, root)).status, 201);
      const whole = (await h.req('GET', '/v1/admin/keys', undefined, root)).body.keys;
      assert.equal(whole.length, 4);
      const seen: any[] = [];
      let cursor: string | null = null;
      do {
        const r: any = await h.req('GET', `/v1/admin/keys?limit=3${cursor ? `&cursor=${cursor}` : ''}`, undefined, root);
        assert.equal(r.status, 200, r.text);
        seen.push(...r.body.keys);
        cursor = r.body.nextCursor;
      } while (cursor);
      assert.deepEqual(seen, whole);
      assert.deepEqual(
        whole.map((k: any) => k.label),
        ['k0', 'k1', 'k2', 'k3'],
        'oldest first',
      );
      expectError(await h.req('GET', '/v1/admin/keys?limit=0', undefined, root), 400, 'bad_request');

      const none = await h.req('GET', '/v1/escrows');
      expectError(none, 401, 'unauthorized');
      assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="escrow-settlement"');
      const wrong = await h.req('GET', '/v1/escrows', undefined, { authorization: 'Bearer nope' });
      expectError(wrong, 401, 'unauthorized');
      assert.equal(wrong.headers.get('www-authenticate'), 'Bearer realm="escrow-settlement", error="invalid_token"');
      const admin = await h.req('GET', '/v1/admin/keys');
      expectError(admin, 401, 'unauthorized');
      assert.match(admin.headers.get('www-authenticate')!, /^Bearer /);
      const ok = await h.req('GET', '/v1/escrows', undefined, root);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('www-authenticate'), null, 'only a 401 challenges');
    } finally {
      await h.close();
    }
  });
}
