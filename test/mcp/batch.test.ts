// The calls of one MCP JSON-RPC batch count as the REST requests they are (docs/mcp.md "Batches",
// docs/security.md "The edge"): each spends the key's rate budget, and each call open at once beyond the
// first takes a place of the client's concurrency cap, or is answered with the cap's 429.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeys } from '@escrow-settlement/client';
import { makeHarness, openStore, type Harness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { bearer, HOSTED, mint } from '../admin/helpers.ts';
import { createClientCap } from '../../src/node/clientCap.ts';
import { admitter } from '../../src/node/adapter.ts';
import { BASE } from './helpers.ts';

const HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' };

const batchOf = (n: number, name: string, args: Record<string, unknown>) =>
  JSON.stringify(
    Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name, arguments: args } })),
  );

/** The results of a batch, in id order: each call's structuredContent and isError. */
async function results(res: Response): Promise<Array<{ isError: boolean; body: any }>> {
  assert.equal(res.status, 200);
  const answers = (await res.json()) as Array<{ id: number; result: { isError?: boolean; structuredContent: any } }>;
  return answers.sort((a, b) => a.id - b.id).map((a) => ({ isError: a.result.isError === true, body: a.result.structuredContent }));
}

async function createEscrows(h: Harness, n: number, headers: Record<string, string> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await h.req(
      'POST',
      '/v1/escrows',
      {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payer: { publicKey: generateKeys().publicKey },
        payee: { publicKey: generateKeys().publicKey },
      },
      headers,
    );
    assert.equal(r.status, 201, r.text);
    ids.push(r.body.id);
  }
  return ids;
}

/**
 * A harness whose reads take 30 ms each, as on a loaded database: a batch's calls, which start one per
 * turn of the event loop, are then open at once and the cap decides.
 */
async function slowReads(): Promise<Harness> {
  const store = await openStore('pglite');
  const db = new Proxy(store.db, {
    get(target, key) {
      const v = Reflect.get(target, key, target);
      if (key === 'query')
        return async (...args: Parameters<typeof target.query>) => {
          await new Promise((r) => setTimeout(r, 30));
          return target.query(...args);
        };
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const h = await makeHarness('pglite', {}, { db });
  return { ...h, close: store.drop };
}

test("a batch's calls take places of the client's concurrency cap: never more open than the cap, the rest answered 429 like the REST request", async () => {
  const h = await slowReads();
  try {
    await createEscrows(h, 5);
    const MAX = 3;
    const cap = createClientCap(MAX);
    const client = '198.51.100.7';
    const admit = admitter(cap, client, MAX);
    let peak = 0;
    const counting = () => {
      const place = admit();
      peak = Math.max(peak, cap.open(client));
      return place;
    };
    // The edge took the batch's own place before app.fetch, as it does for every request.
    assert.equal(cap.enter(client), true);
    const N = 12;
    const answers = await results(
      await h.app.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: HEADERS, body: batchOf(N, 'list_escrows', { limit: 20 }) }), {
        ip: client,
        admit: counting,
      }),
    );
    const served = answers.filter((a) => !a.isError);
    const refused = answers.filter((a) => a.isError);
    assert.equal(served.length + refused.length, N);
    for (const a of served) assert.equal(a.body.escrows.length, 5);
    for (const a of refused) {
      assert.equal(a.body.error.code, 'rate_limited');
      assert.match(a.body.error.message, /already has 3 requests open.*CLIENT_MAX_CONCURRENCY/);
    }
    assert.ok(refused.length > 0, 'calls beyond the cap were refused');
    assert.ok(served.length >= MAX, `the batch's own place and the ${MAX - 1} free ones served calls (${served.length})`);
    assert.ok(peak <= MAX, `at most ${MAX} places were taken at once (peak ${peak})`);
    assert.equal(cap.open(client), 1, "every call's place came back; the batch's own is the edge's to give back");
    cap.leave(client);

    // Another client's places are its own: a full cap for one address does not touch another's.
    assert.equal(cap.enter('198.51.100.8'), true);
    cap.leave('198.51.100.8');

    // Without the edge's cap (Deno, in-process) every call runs.
    const uncapped = await results(
      await h.app.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: HEADERS, body: batchOf(N, 'list_escrows', { limit: 20 }) }), {
        ip: client,
      }),
    );
    assert.equal(uncapped.filter((a) => !a.isError).length, N);
  } finally {
    await h.close();
  }
});

test("each call of a batch spends the key's rate budget as its REST request does", async () => {
  // A window of an hour: a window boundary inside the test would give the batch a fresh budget.
  const h = await makeHarness('pglite', { ...HOSTED, RATE_LIMIT_WINDOW_MS: '3600000' });
  try {
    const key = await mint(h, { label: 'batch budget', rateLimitMax: 4 });
    const mine = await h.req(
      'POST',
      '/v1/escrows',
      {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payer: { publicKey: generateKeys().publicKey },
        payee: { publicKey: generateKeys().publicKey },
      },
      bearer(key.secret),
    );
    assert.equal(mine.status, 201, mine.text);
    // One unit spent; three left for a batch of six reads.
    const answers = await results(
      await h.app.fetch(
        new Request(`${BASE}/mcp`, {
          method: 'POST',
          headers: { ...HEADERS, ...bearer(key.secret) },
          body: batchOf(6, 'get_escrow', { escrowId: mine.body.id }),
        }),
        { ip: '127.0.0.1' },
      ),
    );
    assert.equal(answers.filter((a) => !a.isError).length, 3, JSON.stringify(answers).slice(0, 600));
    const limited = answers.filter((a) => a.isError);
    assert.equal(limited.length, 3);
    for (const a of limited) assert.equal(a.body.error.code, 'rate_limited');
    // The REST API sees the same spent budget.
    assert.equal((await h.req('GET', `/v1/escrows/${mine.body.id}`, undefined, bearer(key.secret))).status, 429);
  } finally {
    await h.close();
  }
});

test("a batch's calls start one per turn of the event loop: between two turns, where other clients' sockets are read, a batch of 100 runs a few calls, never all of them", async () => {
  // The embedded store answers in the service's own thread: a call's work is promise callbacks, and
  // calls started together run as one task in which no socket is read. A ticker that runs once per turn
  // of the event loop (setImmediate) counts the list queries answered since its last run.
  const store = await openStore('pglite');
  let listed = 0;
  const db = new Proxy(store.db, {
    get(target, key) {
      const v = Reflect.get(target, key, target);
      if (key === 'query')
        return async (...args: Parameters<typeof target.query>) => {
          const rows = await target.query(...args);
          if (/FROM escrows e WHERE/i.test(args[0]) && /LIMIT/i.test(args[0])) listed++;
          return rows;
        };
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const h = await makeHarness('pglite', {}, { db });
  try {
    await createEscrows(h, 3);
    const N = 100;
    let running = true;
    let seen = 0;
    let mostInOneTurn = 0;
    let turns = 0;
    const ticker = (async () => {
      while (running) {
        await new Promise((r) => setImmediate(r));
        turns++;
        mostInOneTurn = Math.max(mostInOneTurn, listed - seen);
        seen = listed;
      }
    })();
    const answers = await results(
      await h.app.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: HEADERS, body: batchOf(N, 'list_escrows', { limit: 20 }) }), {
        ip: '127.0.0.2',
      }),
    );
    running = false;
    await ticker;
    assert.equal(answers.filter((a) => !a.isError).length, N);
    assert.equal(listed, N);
    assert.ok(
      mostInOneTurn <= 5,
      `${mostInOneTurn} of the batch's ${N} calls ran within one turn of the event loop (${turns} turns in all)`,
    );
  } finally {
    await store.drop();
  }
});
