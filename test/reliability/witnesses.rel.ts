// Hostile and broken witnesses against a started service (docs/witnessing.md "When a witness
// disagrees"): test witnesses written from the C2SP specs (test/witness/witness.ts), served over
// HTTP, and hostile variants of them.
//
// - A lying witness (409 999999999): with WITNESS_QUORUM=2 of two it is a dissent (logged, counted,
//   every closing goes on, /health stays 200); with WITNESS_QUORUM=1 it stops issuance (the
//   operator trusted one witness that far), and once it stops lying a retry resumes issuance
//   without a restart.
// - A flaky witness (a refused empty checkpoint on a new log, then two transient 422s): the new log
//   issues at once, the 422s stop issuance, a retry resumes it.
// - A hanging witness (never answers): closings are refused, /health says 200 "checking" for 30 s,
//   then 503 with the state and why; once the witness answers, issuance starts.
// The times measured go to the run report (and docs/security.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { overHttp, startService, TSX, type Proc } from '../process/proc.ts';
import { funded, settled } from '../fixtures.ts';
import type { Harness } from '../harness.ts';
import { createTestWitness, inconsistentAnswer, sizeAnswer, type TestWitness } from '../witness/witness.ts';
import { serveWitness } from '../witness/http.ts';
import { counts, report, sleep } from './lib.ts';

const KEY = 'root-secret-witnesses-rel-0123';
const INTERVAL_MS = 250;

interface Running {
  proc: Proc;
  h: Harness;
  ws: TestWitness[];
  stop(): Promise<void>;
}

/** A started service (PGlite in a temporary DATA_DIR) with `n` served test witnesses. */
async function start(tag: string, n: number, env: Record<string, string> = {}, before?: (ws: TestWitness[]) => void): Promise<Running> {
  const ws = Array.from({ length: n }, (_, i) => createTestWitness(`w${i + 1}.${tag}.rel`));
  before?.(ws);
  const served = await Promise.all(ws.map((w) => serveWitness(w)));
  const dir = mkdtempSync(join(tmpdir(), `escrow-witness-${tag}-`));
  // The log's key is fixed before start (keyEnv), so the witnesses can follow the log at once.
  const proc = await startService(
    TSX,
    {
      DATA_DIR: dir,
      API_KEY: KEY,
      WITNESSES: ws.map((w, i) => `${w.vkey}=${served[i].url}`).join(','),
      WITNESS_INTERVAL_MS: String(INTERVAL_MS),
      ...env,
    },
    90_000,
  );
  counts.restarts++;
  const h = overHttp(proc.url, KEY);
  const { body } = await h.req('GET', '/.well-known/proof-issuer.json');
  for (const w of ws) w.trust(body.keys.at(-1).vkey);
  return {
    proc,
    h,
    ws,
    async stop() {
      if (proc.child.exitCode === null && proc.child.signalCode === null) assert.equal(await proc.stop('SIGTERM'), 0, proc.stderr());
      for (const s of served) await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until `check` holds (polling every 50 ms); the time it took. */
async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
  return Date.now() - t0;
}

const health = async (h: Harness) => {
  counts.requests++;
  return h.req('GET', '/health');
};

/** One closing attempt: its status (201, or 503 while issuance is refused). */
async function closing(h: Harness): Promise<number> {
  const e = await funded(h);
  const d = await h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'done' } });
  counts.requests += 6;
  if (d.status === 503) {
    assert.equal(d.body?.error?.code, 'unavailable', d.text);
    assert.ok(d.headers.get('retry-after'), 'Retry-After on a refused closing');
  } else assert.equal(d.status, 201, d.text);
  return d.status;
}

const holds = (r: Running, size: number) => r.ws.every((w) => [...w.state.values()].some((s) => s.size >= size));

test('a lying witness: a dissent below the quorum stops nothing; with quorum 1 it stops issuance until it stops lying', {
  timeout: 300_000,
}, async () => {
  // Quorum 2 of two: the liar lies from the start, every closing goes on.
  const two = await start('liar2', 2, {}, (ws) => {
    ws[1].intercept = () => sizeAnswer(999_999_999);
  });
  let closed = 0;
  let healthy = 0;
  let dissents = 0;
  try {
    await until('the start check', 60_000, async () => (await health(two.h)).body?.log?.state === 'ok');
    for (let i = 0; i < 10; i++) {
      assert.equal(await closing(two.h), 201, 'a closing beside a lying witness');
      closed++;
      const hl = await health(two.h);
      assert.equal(hl.status, 200, hl.text);
      healthy++;
    }
    counts.escrows += closed;
    const m = await two.h.req('GET', '/v1/admin/metrics');
    assert.equal(m.status, 200, m.text);
    assert.ok(m.body.witnesses.dissents >= 1, JSON.stringify(m.body.witnesses));
    const lines = two.proc.stderr().split('\n');
    assert.ok(lines.some((l) => /a witness dissents/.test(l) && /999999999/.test(l)));
    assert.equal(lines.filter((l) => /behind its witnesses/.test(l)).length, 0, 'never behind');
    dissents = m.body.witnesses.dissents;
  } finally {
    await two.stop();
  }

  // Quorum 1 of two: the operator trusts one witness that far. Closings first, then the lie.
  const one = await start('liar1', 2, { WITNESS_QUORUM: '1' });
  try {
    const [, liar] = one.ws;
    await until('the start check', 60_000, async () => (await health(one.h)).body?.log?.state === 'ok');
    for (let i = 0; i < 3; i++) await settled(one.h);
    await until('both witnesses cosign 3', 30_000, async () => holds(one, 3));
    liar.intercept = () => sizeAnswer(999_999_999);
    const lieAt = Date.now();
    // The next head reaches the liar; the anchor asks everyone, and stops issuance.
    assert.equal(await closing(one.h), 201, 'the closing that makes the next head');
    const detectMs = await until('/health 503 behind-witnesses', 60_000, async () => (await health(one.h)).status === 503);
    const hl = await health(one.h);
    assert.equal(hl.body.ok, false);
    assert.equal(hl.body.log.state, 'behind-witnesses');
    assert.equal(hl.body.log.witnessed, 999_999_999);
    assert.match(hl.body.log.reason, /999999999/);
    assert.equal(await closing(one.h), 503, 'issuance stopped');
    // It lies for 10 s: asked again with doubling waits (from 250 ms).
    const asked = liar.seen.length;
    await sleep(10_000 - (Date.now() - lieAt));
    const retries = liar.seen.length - asked;
    assert.ok(retries >= 3 && retries <= 8, `asked again ${retries} times in about 10 s`);
    liar.intercept = null;
    const stoppedAt = Date.now();
    await until('/health 200 again', 70_000, async () => (await health(one.h)).status === 200);
    const recoverMs = Date.now() - stoppedAt;
    assert.equal(await closing(one.h), 201, 'issuing again, without a restart');
    assert.equal(one.proc.child.exitCode, null);
    const lines = one.proc.stderr().split('\n');
    assert.equal(lines.filter((l) => /behind its witnesses/.test(l)).length, 1, 'one line for the operator');
    assert.ok(lines.some((l) => /consistent with its witnesses again/.test(l)));
    counts.escrows += 6;
    report('witnesses: a lying witness (409 999999999)', {
      quorum2Closings: closed,
      quorum2HealthChecks200: healthy,
      quorum2Dissents: dissents,
      quorum1DetectMs: detectMs,
      quorum1RetriesIn10s: retries,
      quorum1RecoverMs: recoverMs,
    });
  } finally {
    await one.stop();
  }
});

test('a flaky witness: a new log whose empty checkpoint is refused issues at once; two transient 422s stop issuance until a retry', {
  timeout: 300_000,
}, async () => {
  let refusals = 1;
  const r = await start('flaky', 1, {}, (ws) => {
    ws[0].intercept = () => (refusals-- > 0 ? inconsistentAnswer() : null);
  });
  try {
    const [w] = r.ws;
    const newLogMs = await until('a new log issues', 60_000, async () => (await health(r.h)).body?.log?.state === 'ok');
    assert.equal(w.seen[0]?.status, 422, 'the empty checkpoint was refused');
    assert.equal(await closing(r.h), 201);
    for (let i = 0; i < 2; i++) await settled(r.h);
    await until('the witness cosigns 3', 30_000, async () => holds(r, 3));
    assert.equal(r.proc.stderr().match(/holds 0 entries|behind its witnesses/g), null, 'a log at size 0 is never behind');
    // Two transient 422s on the next head.
    refusals = 2;
    const flakeAt = Date.now();
    assert.equal(await closing(r.h), 201);
    await until('/health 503', 30_000, async () => (await health(r.h)).status === 503);
    const stoppedMs = Date.now() - flakeAt;
    await until('/health 200 again', 70_000, async () => (await health(r.h)).status === 200);
    const recoverMs = Date.now() - flakeAt;
    assert.equal(refusals, -1, 'it answered 422 twice, then cosigned');
    assert.equal(await closing(r.h), 201, 'issuing again, without a restart');
    counts.escrows += 5;
    report('witnesses: a flaky witness (422 on the empty checkpoint, then two transient 422s)', {
      newLogIssuesMs: newLogMs,
      flakeToHealth503Ms: stoppedMs,
      flakeToRecoveredMs: recoverMs,
    });
  } finally {
    await r.stop();
  }
});

test('a hanging witness: closings refused, /health 200 "checking" for 30 s, then 503 with why; an answer ends it', {
  timeout: 300_000,
}, async () => {
  const r = await start('hang', 1, {}, (ws) => {
    ws[0].misbehave = 'silent';
  });
  try {
    const startedAt = Date.now();
    const first = await health(r.h);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.log.state, 'checking');
    assert.equal(await closing(r.h), 503, 'closings wait for the witness');
    const flipMs = await until('/health 503 while checking', 45_000, async () => (await health(r.h)).status === 503);
    const sinceStart = Date.now() - startedAt;
    const hl = await health(r.h);
    assert.equal(hl.body.ok, false);
    assert.equal(hl.body.log.state, 'checking');
    assert.match(hl.body.log.reason, /closings have been refused for 3\d s/);
    assert.match(hl.body.log.reason, /no answer within 10000 ms/);
    assert.ok(hl.headers.get('retry-after'));
    for (const f of ['service', 'issuer', 'version', 'uptimeSeconds']) assert.ok(f in hl.body, `keeps ${f}`);
    assert.equal(await closing(r.h), 503);
    r.ws[0].misbehave = null;
    const answeredAt = Date.now();
    await until('/health 200 once the witness answers', 60_000, async () => (await health(r.h)).status === 200);
    const recoverMs = Date.now() - answeredAt;
    assert.equal((await health(r.h)).body.log.state, 'ok');
    assert.equal(await closing(r.h), 201);
    counts.escrows += 4;
    report('witnesses: a hanging witness', {
      health503AfterMs: flipMs,
      health503SinceFirstLookMs: sinceStart,
      recoverAfterAnswerMs: recoverMs,
    });
  } finally {
    await r.stop();
  }
});
