// Witnesses cannot halt issuance alone (docs/witnessing.md "When a witness disagrees"), through the
// front door with test witnesses and hostile variants of them: a 409 naming a size or a 422 is a
// claim; fewer than WITNESS_QUORUM dissenters are logged and counted and closings go on; a quorum
// of them stops issuance, and every refusal is asked again with backoff, so a witness that stops
// lying (or a flaky one that recovers) resumes issuance without a restart. A log at size 0 is never
// behind. /health answers 503 whenever closings are refused: behind its witnesses, or checking for
// longer than 30 s.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeHarness, STORES, expectError, type Harness } from '../harness.ts';
import { funded, settled } from '../fixtures.ts';
import { anchorChecks, type AnchorChecks } from '../../src/witness/check.ts';
import { submitOnce } from '../../src/witness/submitter.ts';
import { createTestWitness, inconsistentAnswer, sizeAnswer, witnessFetch, type TestWitness } from './witness.ts';
import { ROOT, withKey } from '../admin/helpers.ts';

type Line = { msg: string; fields?: Record<string, unknown> };

interface Setup {
  h: Harness;
  ws: TestWitness[];
  checks: AnchorChecks;
  lines: Line[];
  /** Moves the service's clock forward (backoff waits and the 30 s of /health pass without sleeping). */
  advance(ms: number): void;
  tick(): Promise<void>;
  submit(): Promise<void>;
  deliver(): ReturnType<Harness['req']>;
}

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.close();
});

/** A harness with `n` test witnesses, `closings` closed before the checks start, then the checks begun. */
async function setup(
  kind: (typeof STORES)[number],
  tag: string,
  n: number,
  env: Record<string, string> = {},
  closings = 1,
  timeoutMs = 2000,
  intervalMs = 50,
): Promise<Setup> {
  const ws = Array.from({ length: n }, (_, i) => createTestWitness(`w${i + 1}.${tag}.test`));
  const routes = Object.fromEntries(ws.map((w, i) => [`http://w${i + 1}.test/`, w]));
  const fetchW = witnessFetch(routes);
  let offset = 0;
  // Hosted (the root key reads the metrics page).
  const raw = await makeHarness(
    kind,
    {
      API_KEY: ROOT,
      WITNESSES: ws.map((w, i) => `${w.vkey}=http://w${i + 1}.test/`).join(','),
      WITNESS_INTERVAL_MS: String(intervalMs),
      ...env,
    },
    undefined,
    { nowMs: () => Date.now() + offset },
  );
  harnesses.push(raw);
  const h = withKey(raw, ROOT);
  const { body } = await h.req('GET', '/.well-known/proof-issuer.json');
  for (const w of ws) w.trust(body.keys.at(-1).vkey);
  // Closings before the checks start (an app without its jobs appends freely).
  for (let i = 0; i < closings; i++) await settled(h);
  const lines: Line[] = [];
  const log = (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields });
  const checks = anchorChecks(h.app.svc, { log, fetch: fetchW, intervalMs, timeoutMs });
  return {
    h,
    ws,
    checks,
    lines,
    advance: (ms) => {
      offset += ms;
    },
    tick: () => checks.tick(),
    submit: async () => {
      await h.db.query('UPDATE witness_state SET next_at = now()');
      await submitOnce(h.app.svc, { log, fetch: fetchW, timeoutMs });
    },
    deliver: async () => {
      const e = await funded(h);
      return h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'done' } });
    },
  };
}

const metricsOf = async (h: Harness) => {
  const res = await h.req('GET', '/v1/admin/metrics');
  assert.equal(res.status, 200, res.text);
  return res.body;
};

for (const kind of STORES) {
  describe(`witnesses cannot halt issuance alone [${kind}]`, () => {
    test('two witnesses, quorum 2: one answering 409 999999999 or 422 is a dissent, logged and counted; closings go on', async () => {
      const s = await setup(kind, 'dissent2', 2);
      const [, w2] = s.ws;
      w2.intercept = () => sizeAnswer(999_999_999);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok', 'the honest witness cosigned; one dissenter is fewer than the quorum');
      const said = s.lines.filter((l) => /dissent/.test(l.msg));
      assert.equal(said.length, 1, JSON.stringify(s.lines));
      assert.equal(said[0].fields?.witness, w2.name);
      assert.equal(said[0].fields?.witnessSize, 999_999_999);
      assert.equal(said[0].fields?.claim, 'larger');
      assert.equal(s.lines.filter((l) => /behind its witnesses/.test(l.msg)).length, 0);
      const health = await s.h.req('GET', '/health');
      assert.equal(health.status, 200, health.text);
      assert.equal(health.body.ok, true);
      assert.equal(health.body.log.state, 'ok');
      const closing = await s.deliver();
      assert.equal(closing.status, 201, closing.text);
      assert.equal((await metricsOf(s.h)).witnesses.dissents, 1);
      // The routine submission meets the same claim: the gate stays open, the anchor asks everyone
      // again, and the submitter asks the liar again within 60 s however often it has failed.
      await s.h.db.query('INSERT INTO witness_state (vkey, failures) VALUES ($1, 20) ON CONFLICT (vkey) DO UPDATE SET failures = 20', [
        w2.vkey,
      ]);
      await s.submit();
      const [wait] = await s.h.db.query(
        "SELECT (next_at - now()) <= interval '60 seconds' AS capped, (next_at - now()) > interval '30 seconds' AS long FROM witness_state WHERE vkey = $1",
        [w2.vkey],
      );
      assert.deepEqual(wait, { capped: true, long: true }, 'a refusal is asked again at most 60 s later');
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      assert.equal((await s.deliver()).status, 201, 'a dissent below the quorum does not close the gate');
      const seen = w2.seen.length;
      await s.tick();
      assert.ok(w2.seen.length > seen, 'the dissent made the anchor ask again');
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      // A 422 is a claim of the same weight.
      w2.intercept = () => inconsistentAnswer();
      await s.submit();
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      assert.equal((await s.deliver()).status, 201);
      const m = await metricsOf(s.h);
      assert.ok(m.witnesses.dissents >= 3, JSON.stringify(m.witnesses));
    });

    test('two witnesses, quorum 1: one claiming 999999999 stops issuance; it is asked again with backoff, and issuance resumes when it stops lying', async () => {
      // WITNESS_INTERVAL_MS 5 s: the first retry waits that long on the service's clock.
      const s = await setup(kind, 'liar1', 2, { WITNESS_QUORUM: '1' }, 1, 2000, 5000);
      const [w1, w2] = s.ws;
      w2.intercept = () => sizeAnswer(999_999_999);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'behind-witnesses', 'with quorum 1 one witness is trusted that far');
      const health = await s.h.req('GET', '/health');
      assert.equal(health.status, 503);
      assert.equal(health.body.ok, false);
      assert.equal(health.body.log.state, 'behind-witnesses');
      assert.deepEqual([health.body.log.size, health.body.log.witnessed], [1, 999_999_999]);
      assert.match(health.body.log.reason, /999999999/);
      assert.ok(health.headers.get('retry-after'));
      expectError(await s.deliver(), 503, 'unavailable');
      // Asked again, not before WITNESS_INTERVAL_MS, then at growing intervals.
      const seen = w2.seen.length;
      await s.tick();
      assert.equal(w2.seen.length, seen, 'not asked again within the interval');
      s.advance(60_000);
      await s.tick();
      assert.equal(w2.seen.length, seen + 1, 'asked again after the wait');
      assert.equal(s.h.app.svc.anchor.state(), 'behind-witnesses');
      assert.equal(
        s.lines.filter((l) => /behind its witnesses/.test(l.msg)).length,
        1,
        `one line for the operator, not one per retry: ${JSON.stringify(s.lines)}`,
      );
      // It stops lying: the next retry opens the gate, without a restart.
      w2.intercept = null;
      s.advance(60_000);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      assert.ok(s.lines.some((l) => /consistent with its witnesses again/.test(l.msg)));
      assert.equal((await s.h.req('GET', '/health')).status, 200);
      assert.equal((await s.deliver()).status, 201);
      assert.equal(w1.state.size, 1);
    });

    test('the wait between retries doubles from WITNESS_INTERVAL_MS and stops growing at 60 s', async () => {
      const s = await setup(kind, 'backoff', 1);
      const [w1] = s.ws;
      w1.intercept = () => sizeAnswer(999_999_999);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'behind-witnesses');
      // Find each wait by stepping the clock: the first retry comes after 50 ms, then 100, 200, ...; never more than 60 s.
      const waits: number[] = [];
      for (let i = 0; i < 14; i++) {
        const seen = w1.seen.length;
        let waited = 0;
        while (w1.seen.length === seen) {
          assert.ok(waited <= 60_000, `retry ${i + 1} came after more than 60 s`);
          s.advance(25);
          waited += 25;
          await s.tick();
        }
        waits.push(waited);
      }
      // Steps of 25 ms on the service's clock, plus the real milliseconds the loop takes.
      assert.deepEqual(
        waits.slice(0, 4).map((w) => Math.ceil(w / 50) * 50),
        [50, 100, 200, 400],
        JSON.stringify(waits),
      );
      assert.ok(waits.at(-1)! > 55_000, JSON.stringify(waits));
    });

    test('three witnesses, quorum 2: a liar beside a witness that fails decides nothing (they could hold more); two liars stop issuance', async () => {
      const s = await setup(kind, 'three', 3, { WITNESS_QUORUM: '2' });
      const [, w2, w3] = s.ws;
      w2.intercept = () => sizeAnswer(999_999_999);
      w3.misbehave = 'error-500';
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'checking', 'one cosignature: the liar and the failing one could have witnessed more');
      assert.equal(s.lines.filter((l) => /behind its witnesses/.test(l.msg)).length, 0);
      w3.misbehave = null;
      s.advance(60_000);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok', 'two cosignatures: no checkpoint ahead could have its quorum');
      w3.intercept = () => inconsistentAnswer();
      s.h.app.svc.anchor.suspect('another-server');
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'behind-witnesses', 'two witnesses agree the database is behind or forked');
      const health = await s.h.req('GET', '/health');
      assert.equal(health.status, 503);
      assert.equal(health.body.log.state, 'behind-witnesses');
      assert.match(health.body.log.reason, /2 of its witnesses/);
    });

    test('a flaky witness (two transient 422s, quorum 1) stops issuance, and a retry resumes it', async () => {
      const s = await setup(kind, 'flaky', 1);
      const [w1] = s.ws;
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      await settled(s.h);
      let refusals = 2;
      w1.intercept = () => (refusals-- > 0 ? inconsistentAnswer() : null);
      await s.submit();
      assert.equal(
        s.h.app.svc.anchor.state(),
        'checking',
        'its one witness found the tree inconsistent: checked before anything more is appended',
      );
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'behind-witnesses');
      expectError(await s.deliver(), 503, 'unavailable');
      s.advance(1000);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok', 'the refused head was sent again, and cosigned');
      assert.equal((await s.deliver()).status, 201);
      assert.equal((await s.h.req('GET', '/health')).status, 200);
    });

    test('a new log is never behind: the empty checkpoint refused, or met with a huge 409, does not stop issuance', async () => {
      const s = await setup(kind, 'empty', 1, {}, 0);
      const [w1] = s.ws;
      let refusals = 1;
      w1.intercept = () => (refusals-- > 0 ? inconsistentAnswer() : null);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      assert.equal(s.lines.filter((l) => /holds 0 entries|behind its witnesses/.test(l.msg)).length, 0, JSON.stringify(s.lines));
      assert.equal((await s.h.req('GET', '/health')).status, 200);
      assert.equal((await s.deliver()).status, 201);

      const t = await setup(kind, 'empty409', 1, {}, 0);
      t.ws[0].intercept = () => sizeAnswer(999_999_999);
      await t.tick();
      assert.equal(t.h.app.svc.anchor.state(), 'ok');
      const loud = t.lines.filter((l) => /the database is empty/.test(l.msg));
      assert.equal(loud.length, 1, JSON.stringify(t.lines));
      assert.equal(t.lines.filter((l) => /holds 0 entries|behind its witnesses/.test(l.msg)).length, 0);
      assert.equal((await t.h.req('GET', '/health')).status, 200);
    });

    test('a hanging witness: /health says checking (200) for 30 s, then 503 ok false with the state and why; an answer ends it', async () => {
      const s = await setup(kind, 'hang', 1, {}, 1, 100);
      const [w1] = s.ws;
      w1.misbehave = 'silent';
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'checking');
      expectError(await s.deliver(), 503, 'unavailable');
      let health = await s.h.req('GET', '/health');
      assert.equal(health.status, 200, 'a start check under 30 s is not yet a fault');
      assert.equal(health.body.log.state, 'checking');
      s.advance(29_000);
      assert.equal((await s.h.req('GET', '/health')).status, 200);
      s.advance(2_000);
      health = await s.h.req('GET', '/health');
      assert.equal(health.status, 503, health.text);
      assert.equal(health.body.ok, false);
      assert.equal(health.body.log.state, 'checking');
      assert.match(health.body.log.reason, /refused for 3[01] s/);
      assert.match(health.body.log.reason, /no answer within 100 ms/);
      assert.ok(health.headers.get('retry-after'));
      for (const f of ['service', 'issuer', 'version', 'uptimeSeconds']) assert.ok(f in health.body, `keeps ${f}`);
      w1.misbehave = null;
      s.advance(60_000);
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'ok');
      health = await s.h.req('GET', '/health');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body.log, { state: 'ok', size: 1, witnessed: 1 });
    });

    test('WITNESS_START=best-effort: closings go on while a witness hangs, so /health stays 200 past 30 s', async () => {
      const s = await setup(kind, 'lax', 1, { WITNESS_START: 'best-effort' }, 1, 100);
      s.ws[0].misbehave = 'silent';
      await s.tick();
      assert.equal(s.h.app.svc.anchor.state(), 'checking');
      s.advance(40_000);
      assert.equal((await s.deliver()).status, 201);
      const health = await s.h.req('GET', '/health');
      assert.equal(health.status, 200);
      assert.equal(health.body.log.state, 'checking');
    });
  });
}
