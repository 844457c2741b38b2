// The witness submitter through the front door: checkpoints go to two test witnesses, come back
// cosigned, and GET /v1/log/checkpoint serves them; every bad answer keeps nothing, logs one line
// naming the witness and why, backs off, and never slows a closing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeHarness, STORES, expectError, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { issueSynthetic } from '../tlog/fixtures.ts';
import { submitOnce, type Submitted } from '../../src/witness/submitter.ts';
import { countCosignatures } from '@escrow-settlement/protocol/tlog/cosignature';
import { verifyCheckpoint } from '@escrow-settlement/protocol/issuer';
import { splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { createTestWitness, witnessFetch, type TestWitness } from './witness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of STORES) {
  describe(`witness submitter [${kind}]`, () => {
    let h: Harness;
    let w1: TestWitness;
    let w2: TestWitness;
    let fetchW: typeof fetch;
    let logVkey: string;
    const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const log = (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields });
    const submit = (timeoutMs = 2000): Promise<Submitted[]> => submitOnce(h.app.svc, { log, fetch: fetchW, timeoutMs });
    const of = (r: Submitted[], w: TestWitness) => r.find((x) => x.witness === w.name);
    const kept = async (w: TestWitness) =>
      (await h.db.query('SELECT size::int AS size FROM witness_cosignatures WHERE vkey = $1 ORDER BY size', [w.vkey])).map((r) => r.size);
    const makeDue = () => h.db.query('UPDATE witness_state SET next_at = now()');

    before(async () => {
      w1 = createTestWitness('w1.witness.test');
      w2 = createTestWitness('w2.witness.test');
      fetchW = witnessFetch({ 'http://w1.test/': w1, 'http://w2.test/': w2 });
      h = await makeHarness(kind, { WITNESSES: `${w1.vkey}=http://w1.test/,${w2.vkey}=http://w2.test/`, WITNESS_INTERVAL_MS: '50' });
      const { body } = await h.req('GET', '/.well-known/proof-issuer.json');
      logVkey = body.keys.at(-1).vkey;
      w1.trust(logVkey);
      w2.trust(logVkey);
    });
    after(() => h.close());

    test('before any leaf: nothing to submit, and the checkpoint is 503 with Retry-After (none has its quorum)', async () => {
      assert.deepEqual(await submit(), []);
      const res = await h.req('GET', '/v1/log/checkpoint');
      expectError(res, 503, 'unavailable');
      assert.ok(res.headers.get('retry-after'));
      assert.equal((await h.req('GET', '/v1/log/head')).status, 200, 'the unwitnessed head is still served');
    });

    test('a new head goes to both witnesses; their verified cosignatures make the served checkpoint', async () => {
      for (let i = 0; i < 3; i++) await issueSynthetic(h.db);
      const r = await submit();
      assert.deepEqual(r.map((x) => [x.witness, x.outcome, x.size]).sort(), [
        [w1.name, 'cosigned', 3],
        [w2.name, 'cosigned', 3],
      ]);
      assert.match(w1.seen[0].body, /^old 0\n\n/);
      const note = (await h.req('GET', '/v1/log/checkpoint')).text;
      assert.ok(verifyCheckpoint(note, logVkey).ok, 'the issuer signature comes first and verifies');
      const { signatures } = splitNote(note);
      assert.deepEqual(
        signatures.map((s) => s.name),
        [h.config.logOrigin, w1.name, w2.name],
      );
      assert.equal(countCosignatures(note, [w1.vkey, w2.vkey]).valid.length, 2);
      assert.deepEqual(await submit(), [], 'nothing new: no request');
    });

    test('growth is sent with a consistency proof from the size each witness has', async () => {
      for (let i = 0; i < 2; i++) await issueSynthetic(h.db);
      await makeDue();
      const r = await submit();
      assert.equal(of(r, w1)?.outcome, 'cosigned');
      const body = w1.seen.at(-1)!.body;
      assert.match(body, /^old 3\n([A-Za-z0-9+/]{43}=\n)+\n/);
      assert.equal(w1.state.get(h.config.logOrigin)?.size, 5);
      assert.match((await h.req('GET', '/v1/log/checkpoint')).text, /\n5\n/);
    });

    test("a 409 names the witness's size: the next round resends from it", async () => {
      // This instance forgets what w1 has (as a new instance sharing nothing would).
      await h.db.query('UPDATE witness_state SET witness_size = 0, cosigned_size = NULL WHERE vkey = $1', [w1.vkey]);
      await issueSynthetic(h.db);
      await makeDue();
      const first = await submit();
      assert.equal(of(first, w1)?.outcome, 'conflict');
      assert.equal(of(first, w2)?.outcome, 'cosigned');
      const second = await submit();
      assert.equal(of(second, w1)?.outcome, 'cosigned');
      assert.match(w1.seen.at(-1)!.body, /^old 5\n/);
      assert.deepEqual(await kept(w1), [3, 5, 6]);
    });

    const bad: Array<[TestWitness['misbehave'], RegExp]> = [
      ['garbage', /not signature lines|without a cosignature line/],
      ['oversized', /answered 200 with a body over 16384 bytes.*oversized, not read further/],
      ['other-key', /does not verify/],
      ['other-checkpoint', /does not verify/],
      ['huge-409', /larger than the log/],
      ['error-500', /answered 500/],
      ['silent', /no answer within 200 ms/],
    ];
    for (const [mode, why] of bad) {
      test(`a witness that answers ${mode}: nothing kept, one log line naming it and why, retried with backoff`, async () => {
        w1.misbehave = mode;
        try {
          await issueSynthetic(h.db);
          await makeDue();
          const before = lines.length;
          const keptBefore = await kept(w1);
          const r = await submit(200);
          assert.equal(of(r, w1)?.outcome, 'failed');
          assert.match(of(r, w1)!.reason!, why);
          assert.equal(of(r, w2)?.outcome, 'cosigned', 'the other witness is not held up');
          const mine = lines.slice(before);
          assert.equal(mine.length, 1, JSON.stringify(mine));
          assert.equal(mine[0].fields?.witness, w1.name);
          assert.match(String(mine[0].fields?.reason), why);
          assert.deepEqual(await kept(w1), keptBefore, 'nothing kept');
          // Backing off: an immediate round leaves w1 alone; once the wait has passed it is retried.
          const [state] = await h.db.query('SELECT failures, next_at > now() AS waiting FROM witness_state WHERE vkey = $1', [w1.vkey]);
          assert.equal(state.failures, 1);
          assert.equal(state.waiting, true);
          const seen = w1.seen.length;
          assert.equal(of(await submit(200), w1), undefined);
          assert.equal(w1.seen.length, seen, 'no request while backing off');
          await sleep(150);
          assert.equal(of(await submit(200), w1)?.outcome, 'failed', 'retried after the wait');
          const [again] = await h.db.query(
            "SELECT failures, (next_at - now()) > interval '150 milliseconds' AS longer FROM witness_state WHERE vkey = $1",
            [w1.vkey],
          );
          assert.equal(again.failures, 2);
          assert.equal(again.longer, true, 'the second wait is longer');
        } finally {
          w1.misbehave = null;
        }
        // Recovered: the next round cosigns the current head.
        await makeDue();
        const r = await submit();
        assert.equal(of(r, w1)?.outcome, 'cosigned');
        const [state] = await h.db.query('SELECT failures FROM witness_state WHERE vkey = $1', [w1.vkey]);
        assert.equal(state.failures, 0);
      });
    }

    test('stopping ends a submission in flight at once, recording no failure', async () => {
      w1.misbehave = 'silent';
      try {
        await issueSynthetic(h.db);
        await makeDue();
        const stop = new AbortController();
        const before = lines.length;
        const pending = submitOnce(h.app.svc, { log, fetch: fetchW, timeoutMs: 10_000, signal: stop.signal });
        await sleep(100);
        const t = performance.now();
        stop.abort();
        const r = await pending;
        assert.ok(performance.now() - t < 1000, 'ended at once');
        assert.equal(of(r, w1)?.reason, 'the service is stopping');
        assert.equal(lines.slice(before).length, 0, 'no failure logged');
        const [state] = await h.db.query('SELECT failures, next_at <= now() AS due FROM witness_state WHERE vkey = $1', [w1.vkey]);
        assert.deepEqual([state.failures, state.due], [0, true]);
      } finally {
        w1.misbehave = null;
      }
    });

    test('a closing does not wait for a witness that never answers', async () => {
      w1.misbehave = 'silent';
      // The hung submission ends by its own AbortSignal.timeout, whose timer does not hold Node's
      // event loop open. A service's listening socket does; this test process may hold nothing else,
      // and the runner then cancels the test ("the event loop has already resolved") before it ends.
      const keepAlive = setInterval(() => {}, 1_000);
      try {
        await issueSynthetic(h.db);
        await makeDue();
        const pending = submit(3000);
        const t = performance.now();
        const s = await settled(h);
        const took = performance.now() - t;
        assert.ok(s.proof.id);
        const proof = await h.req('GET', `/v1/log/proof/${s.proof.id}`);
        assert.equal(proof.status, 200, 'its log proof answers at once');
        assert.ok(took < 2500, `the closing took ${took} ms while a submission hung`);
        const r = await pending;
        assert.equal(of(r, w1)?.outcome, 'failed');
      } finally {
        clearInterval(keepAlive);
        w1.misbehave = null;
      }
    });
  });
}
